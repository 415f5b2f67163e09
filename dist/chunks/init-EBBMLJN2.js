#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{calledFolder,isTfFile,localSources,parseConfig,yaml}from"./chunk-2TV5WAEG.js";import{Exit,NylError,problem}from"./chunk-DS7E4AOL.js";import{DEFAULT_CONFIG_FILES,isSafeName,runGit}from"./chunk-NEFAFMKQ.js";import{init_define_NYL_YAML_MODULES}from"./chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();import{mkdirSync,writeFileSync}from"node:fs";import{dirname,join as join3}from"node:path";init_define_NYL_YAML_MODULES();import{existsSync}from"node:fs";import{join as join2}from"node:path";init_define_NYL_YAML_MODULES();var comment=(...lines)=>lines.map(l=>l?` ${l}`:"").join(`
`),HEADER=environments=>comment("Nyl configuration, written by `nyl init`. Every command reads it from the commit checked out","(HEAD), so commit a change before `nyl plan -e ENV --local` shows it. Kinds and fields:","docs/configuration.md and docs/kinds.md of Nyl; `nyl schema` prints the JSON Schema for editors.","",...environments.length>1?[`Promotion: ${environments.join(", then ")}. Each environment reconciles a commit only once the`,"one before it has it recorded without failed or uncertain units; `verified: true` in a","promotion also asks for a verify in sync since (deploy.yml verifies after each reconcile)."]:["One environment; more follow it with `promotion: {after: [previous]}`."]),MODULE_NOTE=folder=>comment(`The root module ${folder||"at the top of the repository"}. Every environment applies it with this spec:`,"keep their states apart (a backend key per environment through spec.initArgs, or","spec.workspace), e.g. with one unit per environment (`environments: [dev]`) each naming its own.","Variables go in spec.variables or spec.varFiles; `needs: [unit]` orders units."),EXAMPLE_NOTE=comment("An example unit, so that `nyl plan -e ENV --local` and `nyl reconcile -e ENV --local` have","something to show: replace it with your own. A Command runs its bash script in the repository","root; `key=value` lines written to $NYL_OUTPUT become its outputs. A Terraform or OpenTofu root","module is a unit too: `kind: Terraform`, `spec: {module: infra/network}`.");function unitsFor(modules,tool){let kind=tool==="tofu"?"OpenTofu":"Terraform";return modules.size?[...modules].map(([module,name])=>({name,kind,module})):[{name:"hello",kind:"Command"}]}function environmentDoc(name,previous){let doc=new(yaml()).Document({kind:"Environment",name,...previous?{promotion:{after:[previous]}}:{}}),after=doc.getIn(["promotion","after"],!0);return after&&(after.flow=!0),doc}function unitDoc(u){let{Document}=yaml();if(u.kind==="Command"){let doc2=new Document({kind:"Command",name:u.name,timeout:"1m",spec:{run:'echo "hello from $NYL_ENVIRONMENT" && echo "greeting=hello" >> "$NYL_OUTPUT"',idempotent:!0}});return doc2.contents.commentBefore=EXAMPLE_NOTE,doc2}let doc=new Document({kind:u.kind,name:u.name,spec:{module:u.module||"."}});return doc.contents.commentBefore=MODULE_NOTE(u.module??""),doc}function composeConfig(environments,units){let docs=[...environments.map((e,i)=>environmentDoc(e,environments[i-1])),...units.map(unitDoc)];docs[0].commentBefore=HEADER(environments);let text=docs.map(d=>d.toString({flowCollectionPadding:!1,lineWidth:0})).join(`---
`);try{parseConfig("init",[{file:"nyl.yaml",text}])}catch(e){let why=e instanceof NylError?e.problems.map(p=>p.message).join("; "):String(e);throw new NylError(problem("NYL-INTERNAL",`nyl init composed a nyl.yaml that does not load: ${why}`,{fix:"this is a bug in nyl; report it with the command you ran"}))}return text}init_define_NYL_YAML_MODULES();var git=async(args,cwd)=>{let r=await runGit(args,{cwd});return{ok:r.code===0,out:r.stdout.toString("utf8").trim(),err:r.stderr.trim()}};async function initRepository(cwd,branch){let top=await git(["rev-parse","--show-toplevel"],cwd);if(!top.ok||!top.out)throw new NylError(problem("NYL-NOT-A-REPOSITORY",`${cwd} is not inside the work tree of a git repository`,{fix:"run `nyl init` in a clone of your repository, or make one first: `git init -b main`"}));let[head,originHead]=await Promise.all([git(["symbolic-ref","-q","--short","HEAD"],top.out),git(["symbolic-ref","-q","--short","refs/remotes/origin/HEAD"],top.out)]),current=head.ok&&head.out?head.out:void 0;if(!current&&branch===void 0)throw new NylError(problem("NYL-INIT-BRANCH","HEAD is detached: no branch to name in the workflows (pushes to it deploy)",{exit:Exit.failed,fix:"check out the branch deploys come from (`git switch main`) and run `nyl init` again, or pass --branch NAME"}));let fromOrigin=originHead.ok&&originHead.out.startsWith("origin/")?originHead.out.slice(7):void 0;return{root:top.out,branch:branch??fromOrigin??current,...current?{current}:{}}}init_define_NYL_YAML_MODULES();import{readFileSync}from"node:fs";import{join,posix}from"node:path";var TERRAFORM_BLOCK=/^[ \t]*terraform[ \t]*\{|\bbackend[ \t]+"[^"\n]*"[ \t]*\{/m,skipped=path=>path.split("/").some(p=>p.startsWith(".")||p==="node_modules");async function tfFiles(root){let r=await runGit(["ls-files","-z","--cached","--others","--exclude-standard","--","*.tf","*.tf.json"],{cwd:root}),paths=[...new Set(r.stdout.toString("utf8").split("\0"))].filter(p=>p&&isTfFile(posix.basename(p))&&!skipped(p)),files=[];for(let path of paths.sort())try{files.push({path,text:readFileSync(join(root,path),"utf8")})}catch{}return files}function declaresTerraform(file){if(!file.path.endsWith(".tf.json"))return TERRAFORM_BLOCK.test(file.text);try{return JSON.parse(file.text)?.terraform!==void 0}catch{return!1}}var folderOf=path=>{let d=posix.dirname(path);return d==="."?"":d};function rootModules(files){let declared=new Set,called=new Set;for(let f of files){let dir=folderOf(f.path);declaresTerraform(f)&&declared.add(dir);for(let source of localSources(f.path,f.text)){let target=calledFolder(dir,source);target!==void 0&&target!==dir&&called.add(target)}}return[...declared].filter(d=>!called.has(d)).sort()}function nameOf(parts){let n=parts.join("-").replace(/[^A-Za-z0-9_.-]+/g,"-").replace(/\.{2,}/g,".").replace(/-{2,}/g,"-").replace(/^[^A-Za-z0-9]+/,"").slice(-100).replace(/^[^A-Za-z0-9]+/,"").replace(/\.+$/,"");return n.endsWith(".lock")&&(n=`${n.slice(0,-5)}-lock`),isSafeName(n)?n:"module"}function unitNames(folders){let parts=new Map(folders.map(f=>[f,f?f.split("/"):["root"]])),depth=new Map(folders.map(f=>[f,1])),names=()=>new Map(folders.map(f=>[f,nameOf(parts.get(f).slice(-(depth.get(f)??1)))])),named=names();for(let grew=!0;grew;){grew=!1;let seen=new Map;for(let[f,n]of named)seen.set(n,[...seen.get(n)??[],f]);for(let alike of seen.values())for(let f of alike.length>1?alike:[])depth.get(f)<parts.get(f).length&&(depth.set(f,depth.get(f)+1),grew=!0);named=names()}let taken=new Set;return new Map(folders.map(f=>{let base=named.get(f),n=base;for(let i=2;taken.has(n);i++)n=`${base.slice(0,96)}-${i}`;return taken.add(n),[f,n]}))}init_define_NYL_YAML_MODULES();init_define_NYL_YAML_MODULES();init_define_NYL_YAML_MODULES();var literal=s=>s.replace(/[.*+?^${}()|[\]\\]/g,"\\$&"),SPELLINGS=[{pattern:l=>l.map(literal).join(",\\s+then\\s+"),spell:l=>l.join(", then ")},{pattern:l=>l.map(literal).join(",\\s+"),spell:l=>l.join(", ")},{pattern:l=>literal(JSON.stringify(l)),spell:l=>JSON.stringify(l)},{pattern:l=>`${l.slice(0,-1).map(literal).join(",\\s+")}\\s+and\\s+${literal(l.at(-1))}`,spell:l=>l.length>1?`${l.slice(0,-1).join(", ")} and ${l.at(-1)}`:l[0]??""}];function listRenamer(lists){if(!lists||lists.from.length<2||lists.from.join()===lists.to.join())return;let{from,to}=lists,anchored=SPELLINGS.map(s=>({re:new RegExp(`^(?:${s.pattern(from)})$`),spell:s.spell}));return{re:new RegExp(SPELLINGS.map(s=>`(?:${s.pattern(from)})`).join("|"),"g"),to:match=>anchored.find(a=>a.re.test(match))?.spell(to)??match}}function renamer(r){let lists=listRenamer(r.lists),names=new Map([...r.names].filter(([a,b])=>a!==b||r.jobs?.has(b)));if(!lists&&!names.size)return text=>text;let word=[...names.keys()].map(literal).join("|"),pattern=word?new RegExp(`(needs\\.)?(?<![\\w])(?:${word})(?![\\w])`,"g"):void 0,targets=[...new Set(names.values())].map(literal).join("|"),twice=targets?new RegExp(`(?<![\\w.-])(${targets})\\s+and\\s+\\1(?![\\w.-])`,"g"):void 0,renameWords=text=>pattern?text.replace(pattern,(match,needs)=>{let name=needs?match.slice(needs.length):match,to=names.get(name)??name;return needs?`needs.${r.jobs?.get(to)??to}`:to}).replace(twice,"$1"):text;return text=>{if(!lists)return renameWords(text);let out="",at=0;for(let m of text.matchAll(lists.re))out+=renameWords(text.slice(at,m.index))+lists.to(m[0]),at=(m.index??0)+m[0].length;return out+renameWords(text.slice(at))}}function jobIds(environments){let taken=new Set;return new Map(environments.map(e=>{let base=/^[A-Za-z_][A-Za-z0-9_-]*$/.test(e)?e:`env_${e.replace(/[^A-Za-z0-9_-]/g,"_")}`,id=base;for(let i=2;taken.has(id);i++)id=`${base}_${i}`;return taken.add(id),[e,id]}))}var drifted=what=>new NylError(problem("NYL-INTERNAL",`examples/workflows/${what}: nyl init does not know how to fill it in`,{fix:"this is a bug in nyl (its example workflows changed shape); report it with the command you ran"})),templateIndex=(i,n,t)=>i===0?0:i===n-1?t-1:Math.min(1,t-1);function jobRenames(from,to,t,i,extra){let names=new Map(extra.names);for(let d of[-1,0,1]){let a=from[t+d],b=to[i+d];a!==void 0&&b!==void 0&&names.set(a,b)}let first=from[0],last=from.at(-1);return names.has(first)||names.set(first,to[0]),names.has(last)||names.set(last,to.at(-1)),{...extra,names,lists:{from,to}}}function renameUnder(node,rename){let{visit,isScalar}=yaml();visit(node,{Node(_,n){n.commentBefore&&(n.commentBefore=rename(n.commentBefore)),n.comment&&(n.comment=rename(n.comment)),isScalar(n)&&typeof n.value=="string"&&(n.value=rename(n.value))}})}function checkJob(job,env,key){let wrong=what=>drifted(`deploy.yml: job ${key}'s ${what} does not name ${env}`);if(job.getIn(["environment","name"])!==env)throw wrong("environment");if(job.getIn(["concurrency","group"])!==`nyl-${env}`)throw wrong("concurrency group");let steps=job.get("steps");for(let step of steps?.items??[]){let input=step.getIn(["with","environment"]);if(input!==void 0&&input!==env)throw wrong(`step ${step.get("name")}`)}}function deployJobs(doc,from,to,extra){let{isMap,isScalar}=yaml(),jobs=doc.get("jobs",!0);if(!isMap(jobs))throw drifted("deploy.yml has no jobs");let templates=jobs.items,keys=templates.map(p=>isScalar(p.key)?p.key.value:void 0);if(keys.join(",")!==from.join(","))throw drifted(`deploy.yml: its jobs ${keys.join(", ")} are not ${from.join(", ")}`);let ids=jobIds(to);jobs.items=to.map((env,i)=>{let t=templateIndex(i,to.length,from.length),pair=templates[t].clone(),id=ids.get(env);isScalar(pair.key)&&(pair.key.value=id);let job=pair.value;return renameUnder(job,renamer({...jobRenames(from,to,t,i,extra),jobs:ids})),i>0?job.set("needs",ids.get(to[i-1])):job.delete("needs"),checkJob(job,env,id),pair})}init_define_NYL_YAML_MODULES();var deploy_default=`# Deploy with Nyl: promote each push to main through dev, then staging, then prod, executing
# exactly the plan reviewed on its pull request; or reconcile one environment on demand, with the
# decisions a person makes (approve, plan, an older source).
#
# Copy this file to .github/workflows/ in the repository that holds nyl.yaml, with plan.yml (the
# plan comment this deploy executes). \`your-org/nyl\` is a placeholder for the repository that
# publishes Nyl's actions: replace it with its real owner/name, and pin the ref (a release tag
# such as v1, or better a full commit SHA).
#
# On a push to main: dev, staging and prod, one job each, chained with \`needs:\`; each starts only
# when the one before it succeeded. nyl.yaml enforces the same order on its own, whoever runs the
# reconcile (this workflow, a re-run, a workstation): with
#   kind: EnvironmentGroup
#   name: line
#   promote: [dev, staging, prod]        # or, on an Environment: promotion: {after: [dev], verified: true}
# staging reconciles a commit only once dev has it recorded without failed or uncertain units
# (and, with verified: true, a verify after it found dev in sync); otherwise NYL-PROMOTION-PENDING
# (exit 2), and nothing is executed.
#
# Each push executes the plan reviewed on its pull request (plan-from-pr):
# - merged through a pull request whose plan job commented the plan: that plan, exactly, its
#   awaiting-approval units included: merging the reviewed pull request approves them;
# - the plan went stale meanwhile (another merge or run changed the environment, or main moved
#   and the merge resolves to other documents): refused (exit 2, result refused), nothing
#   executed, the new plan posted on the pull request as a reply;
# - a direct push, or a pull request without a plan comment (a fork's, whose token may not
#   comment): refused with NYL-PLAN-MISSING (exit 2), nothing executed.
# Nothing reaches an environment on a push that nobody reviewed. To deploy a refused push, review
# the plan (the reply on the pull request, or \`nyl plan -e dev\`) and run this workflow by hand:
#   gh workflow run deploy.yml -f environment=dev -f plan=<token>
# then staging and prod the same way; the promotion gate still keeps the order.
#
# On demand, from the Actions tab (Run workflow) or with
#   gh workflow run deploy.yml -f environment=prod -f approve=dns
# The job summary of a run names these inputs in its next steps.
#
# GitHub environments: each job names the GitHub environment of its Nyl environment (create dev,
# staging and prod under Settings > Environments), for its secrets and its protection rules
# (required reviewers, a wait timer, deployment branches), with \`deployment: false\`: GitHub then
# creates no deployment of its own for the job. Nyl creates the deployment instead
# (\`deployments: true\` on the reconcile step), when its run takes the lease, and sets its status
# from what it applied: a superseded older job or a refused one shows nothing, a failed unit shows
# failure, and the environment's latest successful deployment is always the commit Nyl last
# applied. (GitHub's own deployment would be marked successful whenever the job succeeds: also for
# a queued older commit Nyl superseded, which would then show as deployed.) See "Deployments and
# Environments" in docs/github-actions.md.
name: deploy

on:
  push:
    branches: [main]
  workflow_dispatch:
    inputs:
      environment:
        description: Environment to reconcile (a push promotes through all of them)
        type: choice
        required: true
        options: [dev, staging, prod]
      approve:
        description: Units whose unsafe re-run is approved (comma separated), e.g. after drift
        type: string
        required: false
      plan:
        description: Execute exactly the plan \`nyl plan\` (or the plan comment) gave this token for
        type: string
        required: false
      allow-older-source:
        description: Apply this commit although the environment was last reconciled from a newer one
        type: boolean
        required: false
        default: false
      reason:
        description: Why (needed with allow-older-source; recorded with who asked)
        type: string
        required: false

# Nyl keeps its lease, runs and receipts in refs/nyl/<environment>/* of this repository and
# pushes them: it needs contents: write. actions: read lets it ask the Actions API whether the
# job holding a lease has finished, so a lease left by a job that died is taken over at once,
# without a person breaking it. plan-from-pr reads the pull request of the pushed commit and its
# plan comment (pull-requests: read); write lets it post the new plan there when the reviewed one
# went stale (with read only, the deploy is refused all the same, with a warning instead of the
# reply). deployments: write lets it create the GitHub deployment of each run and set its status
# (deployments: true); without it the deploy still runs, with a NYL-DEPLOYMENT warning.
permissions:
  contents: write
  actions: read
  pull-requests: write
  deployments: write

jobs:
  dev:
    name: reconcile dev
    # A push promotes through every environment; a manual run reconciles only the one chosen.
    if: \${{ github.event_name == 'push' || inputs.environment == 'dev' }}
    runs-on: ubuntu-latest
    # A job timeout cancels the step exactly like the Cancel button does (see below): keep it well
    # above wait-lease plus your longest reconcile, so it fires only when something hangs.
    timeout-minutes: 120
    # The GitHub environment dev: its secrets and variables are this job's (\`secrets.*\`, \`vars.*\`;
    # pass what the units' tools need through the reconcile step's \`env:\`, see there), and its
    # protection rules run before the job starts. deployment: false: no deployment of GitHub's
    # own; the reconcile step's \`deployments: true\` creates the one that tells what Nyl applied.
    environment:
      name: dev
      deployment: false
    # One group per environment serializes every Nyl workflow of that environment (deploy, verify,
    # recover), and Nyl's lease serializes whatever runs outside GitHub on top of that. With one
    # group per job, the staging job of one push and the dev job of the next run side by side.
    #
    # cancel-in-progress must stay false. Cancelling a running reconcile is not a clean stop: the
    # runner sends SIGINT, SIGTERM 7.5 s later and kills the step 2.5 s after that. Nyl forwards
    # the signal to its tools, kills them after cancel-grace, marks the units still running as
    # uncertain and releases the lease, and the next run has to recover them (an uncertain unit
    # with a manual policy waits for a person). A tool that needs more than a few seconds to stop
    # is simply killed halfway. So a newer push waits here for the running job instead.
    #
    # queue: max keeps every pending job (up to 100) instead of only the newest one, so a verify
    # or recover waiting in the same group cannot push a deploy out. GitHub does not promise the
    # order they start in: Nyl does not apply a commit older than the one the environment was
    # last reconciled from (NYL-SOURCE-OLDER, result superseded, the step succeeds).
    concurrency:
      group: nyl-dev
      cancel-in-progress: false
      queue: max
    steps:
      - uses: actions/checkout@v4
        with:
          # A full clone, not a shallow one: Nyl reads nyl.yaml from the checked-out commit,
          # fetches refs/nyl/<environment>/* into this clone, pushes commits built on them, and
          # tells an older commit from a newer one by their history.
          fetch-depth: 0

      - name: Reconcile dev
        id: nyl
        uses: your-org/nyl/actions/reconcile@v1
        # The tools Nyl runs inherit the step's environment variables: the credentials they need
        # come from the GitHub environment's secrets, e.g.
        #   env:
        #     CLOUD_API_TOKEN: \${{ secrets.CLOUD_API_TOKEN }}
        with:
          environment: dev
          # The default, written out: git over HTTPS, and the GitHub API (the permissions above).
          # A GitHub App or personal token goes here (and to actions/checkout).
          token: \${{ github.token }}
          # A GitHub deployment of the checked-out commit to the GitHub environment dev, created
          # when the run takes the lease (in_progress) and finished as the run ends: success
          # (with the Environment's url from nyl.yaml), failure or error. A superseded or refused
          # job creates none. Name another GitHub environment with deployment-environment.
          deployments: true
          # A push executes the plan reviewed on its pull request; a manual run does not (it may
          # pass a token in plan instead; plan and plan-from-pr cannot be set together).
          plan-from-pr: \${{ github.event_name == 'push' }}
          # A run from outside this workflow (a workstation, another repository's workflow) may
          # hold the lease: wait for it instead of failing with NYL-LEASE-HELD.
          wait-lease: 30m
          # Time tools get to stop after the signal before their process groups are killed; it
          # must end inside the runner's 7.5 s, leaving time to checkpoint and release the lease.
          cancel-grace: 5s
          # A manual run's decisions; empty on a push.
          approve: \${{ inputs.approve }}
          plan: \${{ inputs.plan }}
          allow-older-source: \${{ inputs.allow-older-source }}
          reason: \${{ inputs.reason }}

      # staging's gate with \`verified: true\` admits a commit only once a verify after dev's
      # reconcile found dev in sync: this is that verify (drift fails the job, and staging waits).
      # Without \`verified\` in your gates, this step only adds a check; drop it if you like.
      - name: Verify dev
        id: verify
        uses: your-org/nyl/actions/verify@v1
        with:
          environment: dev
          token: \${{ github.token }}
          wait-lease: 30m

      - name: Show the outcome
        if: \${{ always() && steps.nyl.outputs.result != '' }}
        env:
          RESULT: \${{ steps.nyl.outputs.result }}
          EXIT_CODE: \${{ steps.nyl.outputs.exit-code }}
          RUN: \${{ steps.nyl.outputs.run }}
          OBSERVED: \${{ steps.nyl.outputs.observed }}
          EXECUTED: \${{ steps.nyl.outputs.executed }}
          CURRENT: \${{ steps.nyl.outputs.current }}
          FAILED: \${{ steps.nyl.outputs.failed }}
          UNCERTAIN: \${{ steps.nyl.outputs.uncertain }}
          UNITS: \${{ steps.nyl.outputs.units }}
          VERIFIED: \${{ steps.verify.outputs.result }}
          URL: \${{ steps.nyl.outputs.environment-url }}
        run: |
          echo "result: $RESULT (exit $EXIT_CODE), run \${RUN:-none}, observed \${OBSERVED:-unchanged}, verify \${VERIFIED:-not run}"
          echo "url: \${URL:-none (the Environment has no url, or it could not be resolved)}"
          echo "executed $EXECUTED, current $CURRENT, failed $FAILED, uncertain $UNCERTAIN"
          echo "$UNITS" | jq -r '.[] | [.unit, .kind, .result, .detail] | @tsv'

  staging:
    name: reconcile staging
    needs: dev
    # On a push: once dev succeeded (a job that needs another is skipped when that one was, so
    # \`!cancelled()\` lets a manual run of staging alone through). The promotion gate in nyl.yaml
    # guards a manual run too: staging refuses a commit dev does not have yet.
    if: \${{ !cancelled() && ((github.event_name == 'push' && needs.dev.result == 'success') || inputs.environment == 'staging') }}
    runs-on: ubuntu-latest
    timeout-minutes: 120
    # The GitHub environment staging, for its secrets and protection rules, without a deployment
    # of GitHub's own (see dev).
    environment:
      name: staging
      deployment: false
    # Its own group, as dev's (see there): never cancel in progress, keep every pending job.
    concurrency:
      group: nyl-staging
      cancel-in-progress: false
      queue: max
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0

      - name: Reconcile staging
        id: nyl
        uses: your-org/nyl/actions/reconcile@v1
        with:
          environment: staging
          token: \${{ github.token }}
          deployments: true
          plan-from-pr: \${{ github.event_name == 'push' }}
          wait-lease: 30m
          cancel-grace: 5s
          approve: \${{ inputs.approve }}
          plan: \${{ inputs.plan }}
          allow-older-source: \${{ inputs.allow-older-source }}
          reason: \${{ inputs.reason }}

      # For prod's gate (verified: true), as dev's verify is for staging's.
      - name: Verify staging
        id: verify
        uses: your-org/nyl/actions/verify@v1
        with:
          environment: staging
          token: \${{ github.token }}
          wait-lease: 30m

      - name: Show the outcome
        if: \${{ always() && steps.nyl.outputs.result != '' }}
        env:
          RESULT: \${{ steps.nyl.outputs.result }}
          EXIT_CODE: \${{ steps.nyl.outputs.exit-code }}
          RUN: \${{ steps.nyl.outputs.run }}
          VERIFIED: \${{ steps.verify.outputs.result }}
          UNITS: \${{ steps.nyl.outputs.units }}
        run: |
          echo "result: $RESULT (exit $EXIT_CODE), run \${RUN:-none}, verify \${VERIFIED:-not run}"
          echo "$UNITS" | jq -r '.[] | [.unit, .kind, .result, .detail] | @tsv'

  prod:
    name: reconcile prod
    needs: staging
    if: \${{ !cancelled() && ((github.event_name == 'push' && needs.staging.result == 'success') || inputs.environment == 'prod') }}
    runs-on: ubuntu-latest
    timeout-minutes: 120
    # The GitHub environment prod, for its secrets and protection rules, without a deployment of
    # GitHub's own (see dev). To have a person approve each prod deploy before it starts, give
    # that environment a required reviewer (or a wait timer): GitHub applies both with
    # deployment: false too. On a push the pull request's review approved the plan; the
    # environment's reviewer then approves this job, before it starts and before Nyl takes the
    # lease: a plan that went stale while the job waited is refused as usual (NYL-PLAN-STALE).
    # (Custom deployment protection rules, GitHub Apps, need GitHub's deployment: GitHub fails a
    # job with deployment: false in an environment that has one.)
    environment:
      name: prod
      deployment: false
    concurrency:
      group: nyl-prod
      cancel-in-progress: false
      queue: max
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0

      - name: Reconcile prod
        id: nyl
        uses: your-org/nyl/actions/reconcile@v1
        with:
          environment: prod
          token: \${{ github.token }}
          deployments: true
          plan-from-pr: \${{ github.event_name == 'push' }}
          wait-lease: 30m
          cancel-grace: 5s
          approve: \${{ inputs.approve }}
          plan: \${{ inputs.plan }}
          allow-older-source: \${{ inputs.allow-older-source }}
          reason: \${{ inputs.reason }}

      - name: Show the outcome
        if: \${{ always() && steps.nyl.outputs.result != '' }}
        env:
          RESULT: \${{ steps.nyl.outputs.result }}
          EXIT_CODE: \${{ steps.nyl.outputs.exit-code }}
          RUN: \${{ steps.nyl.outputs.run }}
          UNITS: \${{ steps.nyl.outputs.units }}
        run: |
          echo "result: $RESULT (exit $EXIT_CODE), run \${RUN:-none}"
          echo "$UNITS" | jq -r '.[] | [.unit, .kind, .result, .detail] | @tsv'
`;var plan_default=`# Plan with Nyl: on every pull request into main, plan each environment from the pull request's
# configuration against its recorded state, and keep one comment per environment on the pull
# request up to date: what will execute and why, what awaits approval, the dead runs the deploy
# imports first, and the plan's token. Nothing is executed, no lease is taken, nothing is written
# under refs/nyl/, no unit script runs.
#
# deploy.yml executes exactly the plan commented here when the pull request is merged
# (plan-from-pr), or refuses it if it went stale and posts the new plan here as a reply.
#
# Copy this file to .github/workflows/ next to deploy.yml. \`your-org/nyl\` is a placeholder for the
# repository that publishes Nyl's actions: replace it with its real owner/name, and pin the ref.
name: plan

on:
  # pull_request, never pull_request_target. On pull_request GitHub checks out the pull request's
  # merge commit with a token a fork cannot abuse (read-only, no secrets, for a fork's pull
  # request). pull_request_target runs with the base repository's write token and its secrets:
  # checking a fork's code out there hands that token to the fork's nyl.yaml, scripts and actions.
  # The lint refuses that combination (kind nyl-pr-security).
  pull_request:
    # No \`paths:\` filter: deploy.yml refuses the merge of a pull request that has no plan comment
    # (NYL-PLAN-MISSING), and a unit's script or module changes its plan as surely as nyl.yaml.
    branches: [main]

# Reading refs/nyl/<environment>/* needs contents: read; the plan comment pull-requests: write.
# On a fork's pull request GitHub gives the token read access only: the plan is still made and
# shown in the job summary, the comment is not posted (a NYL-PLAN-COMMENT warning says so), and
# the merge is deployed by hand (see deploy.yml).
permissions:
  contents: read
  pull-requests: write

jobs:
  plan:
    name: plan
    runs-on: ubuntu-latest
    timeout-minutes: 15
    # A newer push to the pull request makes this plan obsolete: cancel it. That is safe for a
    # plan, and only for a plan: it holds no lease and writes nothing but the comment. Not the
    # nyl-<environment> group of the deploys: a plan neither waits for them nor holds them up.
    concurrency:
      group: nyl-plan-\${{ github.event.pull_request.number }}
      cancel-in-progress: true
    # No GitHub environment: this plan runs no tool (no resource-plans), so it needs no secrets.
    # With resource-plans: true it runs terraform/tofu plan and needs credentials that can read the
    # state: plan one environment per job (a matrix, \`environment: \${{ matrix.environment }}\` on
    # the plan step) and give each job a GitHub environment holding read-only credentials,
    #   environment: { name: "\${{ matrix.environment }}-plan", deployment: false }
    # deployment: false, as a plan deploys nothing. Not the deploy's environment: its required
    # reviewers would gate every pull request's plan, and its write credentials would reach the
    # pull request's code (see resource-plans in docs/github-actions.md).
    steps:
      - uses: actions/checkout@v4
        with:
          # The default ref: the merge of the pull request into main, i.e. the documents its
          # merge will resolve to. A plan needs no history (unlike reconcile), so the clone may be
          # shallow, and Nyl passes its own token to git: checkout need not keep one in .git/config.
          persist-credentials: false

      - name: Plan every environment
        id: plan
        uses: your-org/nyl/actions/plan@v1
        with:
          # Every environment, in promotion order (dev, staging, prod for a group's
          # \`promote: [dev, staging, prod]\`); or name some: \`environments: dev, staging\`.
          # One comment per environment, found again by a hidden marker and updated in place.
          comment: true
          token: \${{ github.token }}

      - name: Show the plans
        if: \${{ always() && steps.plan.outputs.tokens != '' }}
        env:
          TOKENS: \${{ steps.plan.outputs.tokens }}
          EXECUTE: \${{ steps.plan.outputs.execute }}
          AWAITING: \${{ steps.plan.outputs.awaiting-approval }}
          UNITS: \${{ steps.plan.outputs.units }}
        run: |
          echo "to execute: $EXECUTE, awaiting approval: $AWAITING (approved by the merge's deploy)"
          echo "$TOKENS" | jq -r 'to_entries[] | "\\(.key)\\t\\(.value)"'
          echo "$UNITS" | jq -r '.[] | select(.result != "current") | [.environment, .unit, .result, .detail] | @tsv'
`;var recover_default=`# Recover with Nyl: the manual decisions a person makes after a run died or left units uncertain.
# Run it from the Actions tab (Run workflow) or with
#   gh workflow run recover.yml -f environment=dev -f action=import -f reason="runner was killed"
#
#   lease-break  the lease holder is gone (its runner was killed): declare it so. Nothing else
#                writes the environment until its run is imported (import, or the next deploy).
#   import       import the dead run: units it was executing become uncertain, and the next
#                reconcile runs them under their recovery policy. Executes nothing.
#   retry        (needs unit) you checked what the uncertain unit did: clear its condition so
#                the next reconcile executes it again.
#   accept       (needs unit and run) adopt the checkpoint that run recorded for the unit, e.g.
#                a late checkpoint of a run whose lease was broken, as the unit's receipt.
#
# Nyl records who asked, as the git identity, with the reason: the job below sets it to the person
# who ran this workflow (a runner has no git identity of its own).
# \`your-org/nyl\` is a placeholder for the repository that publishes Nyl's actions: replace it with
# its real owner/name, and pin the ref (a release tag such as v1, or better a full commit SHA).
name: recover

on:
  workflow_dispatch:
    inputs:
      environment:
        description: Environment
        type: choice
        required: true
        options: [dev, staging, prod]
      action:
        description: What to do
        type: choice
        required: true
        default: import
        options: [lease-break, import, retry, accept]
      unit:
        description: Unit (retry and accept)
        type: string
        required: false
      run:
        description: Run whose checkpoint to adopt (accept)
        type: string
        required: false
      reason:
        description: Why (recorded with who asked)
        type: string
        required: true

permissions:
  contents: write # write refs/nyl/<environment>/*
  actions: read # import: ask the Actions API whether the job that held the lease has finished
# The Nyl steps use the job token (their token input defaults to it) for git and the Actions API.

jobs:
  recover:
    name: \${{ inputs.action }} \${{ inputs.environment }}
    runs-on: ubuntu-latest
    timeout-minutes: 30
    # The same group as deploy.yml and verify.yml: while this job runs, no Nyl job of this
    # repository runs for the environment, so the lease holder you break cannot be one of them.
    # A deploy waiting for the dead run's lease (wait-lease) holds the group: cancel that waiting
    # run first, it has taken nothing yet. cancel-in-progress stays false and queue: max keeps
    # every pending job (see deploy.yml).
    # No GitHub environment: recover and lease-break run no tool (they write only
    # refs/nyl/<environment>/*, with the job's token), so they need none of its secrets, and an
    # emergency lease-break should not wait for the environment's reviewers. If your state remote
    # needs a credential kept in the environment, add
    #   environment: { name: "\${{ inputs.environment }}", deployment: false }
    # (deployment: false: a recover deploys nothing, and must not show as a deployment).
    concurrency:
      group: nyl-\${{ inputs.environment }}
      cancel-in-progress: false
      queue: max
    env:
      GIT_COMMITTER_NAME: \${{ github.actor }}
      GIT_COMMITTER_EMAIL: \${{ github.actor }}@users.noreply.github.com
    steps:
      - name: Check the inputs
        env:
          ACTION: \${{ inputs.action }}
          UNIT: \${{ inputs.unit }}
          RUN: \${{ inputs.run }}
          REASON: \${{ inputs.reason }}
        run: |
          fail() { echo "::error title=recover inputs::$1"; exit 1; }
          [ -n "\${REASON// /}" ] || fail "reason is required: why, recorded with who asked"
          case "$ACTION" in
            retry) [ -n "$UNIT" ] || fail "retry needs unit: the uncertain unit to run again" ;;
            accept)
              [ -n "$UNIT" ] || fail "accept needs unit: the unit whose checkpoint to adopt"
              [ -n "$RUN" ] || fail "accept needs run: the run whose checkpoint to adopt" ;;
            *) [ -z "$UNIT$RUN" ] || echo "::warning title=recover inputs::$ACTION ignores unit and run" ;;
          esac

      - uses: actions/checkout@v4
        with:
          fetch-depth: 0

      - name: Break the lease of \${{ inputs.environment }}
        if: \${{ inputs.action == 'lease-break' }}
        uses: your-org/nyl/actions/lease-break@v1
        with:
          environment: \${{ inputs.environment }}
          reason: \${{ inputs.reason }}

      - name: Import the dead run of \${{ inputs.environment }}
        if: \${{ inputs.action == 'import' }}
        uses: your-org/nyl/actions/recover@v1
        with:
          environment: \${{ inputs.environment }}
          reason: \${{ inputs.reason }}

      - name: Retry \${{ inputs.unit }} in \${{ inputs.environment }}
        if: \${{ inputs.action == 'retry' }}
        uses: your-org/nyl/actions/recover@v1
        with:
          environment: \${{ inputs.environment }}
          unit: \${{ inputs.unit }}
          retry: true
          reason: \${{ inputs.reason }}

      - name: Accept the checkpoint of \${{ inputs.unit }} from run \${{ inputs.run }}
        if: \${{ inputs.action == 'accept' }}
        uses: your-org/nyl/actions/recover@v1
        with:
          environment: \${{ inputs.environment }}
          unit: \${{ inputs.unit }}
          accept: \${{ inputs.run }}
          reason: \${{ inputs.reason }}
`;var verify_default=`# Verify with Nyl: ask each unit's driver, on a schedule, whether its receipt still holds.
#
# Drift is recorded in refs/nyl/<environment>/*, fails the job (fail-on-drift) and keeps one issue
# per environment, titled "Nyl drift: <environment>", up to date: opened when drift appears,
# updated when the findings change, closed when a verify finds none.
# \`your-org/nyl\` is a placeholder for the repository that publishes Nyl's actions: replace it with
# its real owner/name, and pin the ref (a release tag such as v1, or better a full commit SHA).
name: verify

on:
  schedule:
    # Every six hours, off the full hour. Scheduled workflows run on the default branch only.
    - cron: "17 */6 * * *"
  workflow_dispatch:

permissions:
  contents: write # record drift in refs/nyl/<environment>/*
  issues: write # open, update and close the drift issue
  actions: read # ask the Actions API whether the job holding a lease has finished

jobs:
  # The environments to verify, read from nyl.yaml rather than written out here: the plan action
  # outputs every environment of the configuration, in promotion order, as a JSON list. It plans
  # them too (executing nothing, writing nothing), and comments nothing with comment: false.
  environments:
    name: list the environments
    runs-on: ubuntu-latest
    timeout-minutes: 10
    permissions:
      contents: read # the plan only reads refs/nyl/<environment>/*
    outputs:
      list: \${{ steps.plan.outputs.environments }}
    steps:
      - uses: actions/checkout@v4
        with:
          persist-credentials: false
      - name: List the environments
        id: plan
        uses: your-org/nyl/actions/plan@v1
        # The list is output before any environment is planned: an environment that cannot be
        # planned (its configuration is broken) must not keep the others from being verified.
        continue-on-error: true
        with:
          comment: false

  verify:
    name: verify \${{ matrix.environment }}
    needs: environments
    runs-on: ubuntu-latest
    timeout-minutes: 60
    strategy:
      fail-fast: false # drift in one environment must not cancel the others' checks
      matrix:
        # ["dev","staging","prod"]; when nyl.yaml cannot be read at all the list is empty and
        # fromJSON fails this job, saying so. A fixed list works too: [dev, staging, prod].
        environment: \${{ fromJSON(needs.environments.outputs.list) }}
    # The GitHub environment of the Nyl environment, for the credentials the units' checks need
    # (a terraform plan, a spec.check script: pass them through the verify step's \`env:\`), with
    # deployment: false: a verify deploys nothing, and creates no deployment. GitHub applies the
    # environment's required reviewers and wait timer with deployment: false too: a scheduled
    # verify of an environment with a reviewer would wait for one every six hours. For such an
    # environment keep verify's credentials (read-only ones suffice: verify changes nothing) in a
    # GitHub environment of their own without reviewers, e.g. name: \${{ matrix.environment }}-verify.
    environment:
      name: \${{ matrix.environment }}
      deployment: false
    # The same group as deploy.yml: a verify never overlaps a reconcile of its environment, and
    # must not be cancelled by one either (see deploy.yml for why cancel-in-progress stays false).
    # queue: max keeps every pending job, so a scheduled verify does not push a deploy out.
    concurrency:
      group: nyl-\${{ matrix.environment }}
      cancel-in-progress: false
      queue: max
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0

      - name: Verify \${{ matrix.environment }}
        id: nyl
        uses: your-org/nyl/actions/verify@v1
        with:
          environment: \${{ matrix.environment }}
          # The default, written out: git over HTTPS, the Actions API (actions: read) and the
          # drift issue (issues: write). A GitHub App or personal token goes here.
          token: \${{ github.token }}
          drift-issue: true
          fail-on-drift: true
          wait-lease: 30m

      - name: Show the outcome
        if: \${{ always() && steps.nyl.outputs.result != '' }}
        env:
          RESULT: \${{ steps.nyl.outputs.result }}
          DRIFTED: \${{ steps.nyl.outputs.drifted }}
          IN_SYNC: \${{ steps.nyl.outputs.in-sync }}
          ISSUE: \${{ steps.nyl.outputs.drift-issue }}
        run: |
          echo "result: $RESULT; drifted $DRIFTED, in sync $IN_SYNC\${ISSUE:+; drift issue #$ISSUE}"
`;var EXAMPLE_WORKFLOWS={plan:plan_default,deploy:deploy_default,verify:verify_default,recover:recover_default};var NYL_ACTION=/^[A-Za-z0-9_.-]+\/nyl((?:\/[^@\s]*)?)@\S+$/,PLACEHOLDER="your-org/nyl",FORMAT={flowCollectionPadding:!1,lineWidth:0},DISPATCH_CHOICE=["on","workflow_dispatch","inputs","environment","options"];function flowList(doc,items){let node=doc.createNode(items);return node.flow=!0,node}function exampleEnvironments(){let names=yaml().parseDocument(EXAMPLE_WORKFLOWS.deploy).getIn(DISPATCH_CHOICE)?.toJSON?.();if(!Array.isArray(names)||!names.length)throw drifted("deploy.yml has no environment choices");return names}function exampleBranch(){let b=yaml().parseDocument(EXAMPLE_WORKFLOWS.deploy).getIn(["on","push","branches",0]);if(typeof b!="string")throw drifted("deploy.yml has no push branch");return b}function header(doc){let holder=doc.contents?.items?.[0]?.key??doc;return{get:()=>holder.commentBefore??"",set:s=>holder.commentBefore=s}}function fillIn(doc,opts){let{isMap,isScalar,visit}=yaml(),on=doc.get("on",!0);if(isMap(on))for(let event of on.items)isMap(event.value)&&event.value.has("branches")&&event.value.set("branches",flowList(doc,[opts.branch]));doc.hasIn(DISPATCH_CHOICE)&&doc.setIn(DISPATCH_CHOICE,flowList(doc,opts.environments));let actions=opts.actions;actions&&visit(doc,{Pair(_,pair){if(!isScalar(pair.key)||pair.key.value!=="uses"||!isScalar(pair.value))return;let m=NYL_ACTION.exec(String(pair.value.value));m&&(pair.value.value=`${actions.repository}${m[1]}@${actions.ref}`)}})}function note(doc,name,opts){let h=header(doc),text=h.get();opts.actions&&(text=text.replace(/`your-org\/nyl` is a placeholder[^.]*\./,`Nyl's actions come from ${opts.actions.repository}@${opts.actions.ref} (nyl init --actions-ref).`));let made=` Written by \`nyl init\` from Nyl's examples/workflows/${name}.yml: environments ${opts.environments.join(", ")}; branch ${opts.branch}.`;h.set(`${made}

${text}`)}function checkNoLeftover(doc,name,from,to){let{visit,isScalar}=yaml(),left=from.filter(e=>!to.includes(e));if(!left.length)return;let word=new RegExp(`(?<![\\w])(?:${left.join("|")})(?![\\w])`);visit(doc,{Scalar(_,s){if(isScalar(s)&&typeof s.value=="string"&&word.test(s.value))throw drifted(`${name}.yml: the value ${JSON.stringify(s.value)} names an example environment`)}})}function renameComments(doc,rename,skip){let{visit}=yaml();doc.commentBefore&&(doc.commentBefore=rename(doc.commentBefore)),doc.comment&&(doc.comment=rename(doc.comment)),visit(doc,{Node(_,n){if(n===skip)return visit.SKIP;n.commentBefore&&(n.commentBefore=rename(n.commentBefore)),n.comment&&(n.comment=rename(n.comment))}})}function workflow(name,opts,from,branch){let doc=yaml().parseDocument(EXAMPLE_WORKFLOWS[name]),to=opts.environments,branches=branch!==opts.branch?[[branch,opts.branch]]:[],renames={lists:{from,to},names:new Map([...branches,...from.slice(1,-1).map(e=>[e,to[Math.min(1,to.length-1)]]),[from[0],to[0]],[from.at(-1),to.at(-1)]])},jobs=name==="deploy"?doc.get("jobs",!0):void 0;return renameComments(doc,renamer(renames),jobs),jobs&&deployJobs(doc,from,to,{names:new Map(branches)}),fillIn(doc,opts),note(doc,name,opts),checkNoLeftover(doc,name,from,to),doc.toString(FORMAT)}function composeWorkflows(opts){let from=exampleEnvironments(),branch=exampleBranch();return Object.keys(EXAMPLE_WORKFLOWS).map(name=>({path:`.github/workflows/${name}.yml`,content:workflow(name,opts,from,branch)}))}async function planInit(opts){let repo=await initRepository(opts.cwd,opts.branch),modules=unitNames(rootModules(await tfFiles(repo.root))),units=unitsFor(modules,opts.tool),files=[{path:"nyl.yaml",content:composeConfig(opts.environments,units)},...composeWorkflows({environments:opts.environments,branch:repo.branch,actions:opts.actions})].map(f=>({...f,exists:existsSync(join2(repo.root,f.path))})),existing=[...DEFAULT_CONFIG_FILES.filter(f=>f!=="nyl.yaml"&&existsSync(join2(repo.root,f))),...files.filter(f=>f.exists).map(f=>f.path)];if(existing.length&&!opts.force)throw new NylError(problem("NYL-INIT-EXISTS",`${existing.join(", ")} ${existing.length===1?"exists":"exist"} already: nothing written`,{subject:repo.root,exit:Exit.refused,fix:`move ${existing.length===1?"it":"them"} aside, or run \`nyl init --force\` to write over ${existing.length===1?"it":"them"} (see \`nyl init --dry-run\` for what it writes)`}));return{root:repo.root,branch:repo.branch,...repo.current?{current:repo.current}:{},environments:opts.environments,units,actions:opts.actions?`${opts.actions.repository}@${opts.actions.ref}`:`${PLACEHOLDER}@v1`,placeholder:!opts.actions,files}}init_define_NYL_YAML_MODULES();var DEFAULT_ENVIRONMENTS=["dev","staging","prod"],usage=(message,fix)=>new NylError(problem("NYL-USAGE",message,{fix,exit:Exit.failed}));function environmentList(text){if(text===void 0)return DEFAULT_ENVIRONMENTS;let names=text.split(",").map(n=>n.trim()),example="`--environments dev,staging,prod`";if(names.some(n=>!n))throw usage(`init --environments ${JSON.stringify(text)} has an empty name`,`pass names separated by commas, e.g. ${example}`);let bad=names.filter(n=>!isSafeName(n));if(bad.length)throw usage(`init --environments: ${bad.map(n=>JSON.stringify(n)).join(", ")} ${bad.length===1?"is not a valid environment name":"are not valid environment names"}`,`use letters, digits, ".", "_" and "-", starting with a letter or digit, at most 100 characters, without ".." or a final ".lock" (the configuration's name rules), e.g. ${example}`);let twice=names.filter((n,i)=>names.indexOf(n)!==i);if(twice.length)throw usage(`init --environments names ${[...new Set(twice)].join(", ")} more than once`,`name each environment once, in promotion order, e.g. ${example}`);return names}function actionsRef(text){if(text===void 0)return;let m=/^([A-Za-z0-9-]+\/[A-Za-z0-9_.-]+)@([^\s@]+)$/.exec(text.trim());if(!m)throw usage(`init --actions-ref ${JSON.stringify(text)} is not OWNER/REPO@REF`,"name the repository that publishes Nyl’s actions and a ref of it, e.g. `--actions-ref acme/nyl@v1` (or a full commit SHA)");return{repository:m[1],ref:m[2]}}function toolOf(text){if(text===void 0||text==="terraform")return"terraform";if(text==="tofu"||text==="opentofu")return"tofu";throw usage(`init --tool ${JSON.stringify(text)} is not terraform or tofu`,"pass --tool terraform (the default) or --tool tofu (OpenTofu units)")}function branchOf(text){if(text!==void 0){if(!text||/[\s~^:?*[\\]|\.\.|@\{|^[-/.]|[/.]$|\.lock$/.test(text))throw usage(`init --branch ${JSON.stringify(text)} is not a branch name`,"pass the branch deploys come from, e.g. `--branch main`");return text}}function refused(plan,path,e,exists){return new NylError(problem(exists?"NYL-INIT-EXISTS":"NYL-INIT-WRITE",`${path} cannot be written: ${e.message}`,{subject:plan.root,exit:exists?Exit.refused:Exit.failed,fix:exists?"another process made it meanwhile: look at it, then run `nyl init --force` to write over it":"clear the way (a file where a folder goes, a read-only folder, a full disk) and run `nyl init` again"}))}function write(plan,force){for(let f of plan.files)try{mkdirSync(dirname(join3(plan.root,f.path)),{recursive:!0})}catch(e){throw refused(plan,f.path,e,!1)}for(let f of plan.files)try{writeFileSync(join3(plan.root,f.path),f.content,{flag:force?"w":"wx"})}catch(e){throw refused(plan,f.path,e,e.code==="EEXIST")}}function nextSteps(plan){let paths=plan.files.map(f=>f.path.split("/")[0]).filter((p,i,all)=>all.indexOf(p)===i),branchFirst=plan.current===plan.branch?"git switch -c add-nyl && ":"",list=plan.environments.join(", ");return[`Commit and push: \`${branchFirst}git add ${paths.join(" ")} && git commit -m "Deploy with Nyl" && git push -u origin HEAD\`. Once committed, \`nyl plan -e ${plan.environments[0]} --local\` shows the first plan on this machine.`,`${plan.placeholder?`Replace the placeholder ${plan.actions} in every \`uses:\` of .github/workflows/*.yml with the repository that publishes Nyl's actions and a ref of it (\`nyl init --force --actions-ref OWNER/REPO@REF\` writes them so). `:""}In GitHub, create the environment${plan.environments.length>1?"s":""} ${list} (Settings > Environments) and give them the secrets your units need.`,`Open a pull request into ${plan.branch}: the plan workflow comments each environment's plan on it; merging it deploys ${plan.environments.join(", then ")}.`]}function render(plan,dryRun,steps){let lines=[];if(dryRun){for(let f of plan.files)lines.push(`==> ${f.path} <==`,f.content.trimEnd(),"");lines.push(`dry run: nothing written; \`nyl init\` without --dry-run writes the ${plan.files.length} files above.`)}else for(let f of plan.files)lines.push(`${f.exists?"overwrote":"wrote"} ${f.path}`);let units=plan.units.map(u=>u.module!==void 0?`${u.name} (${u.kind} ${u.module||"."})`:`${u.name} (${u.kind} example)`);return lines.push("",`environments: ${plan.environments.join(", ")}`,`units: ${units.join(", ")}`,`branch: ${plan.branch}`,`actions: ${plan.actions}${plan.placeholder?" (a placeholder)":""}`),lines.push("","next steps:",...steps.map((s,i)=>`  ${i+1}. ${s}`)),`${lines.join(`
`)}
`}async function runInit(values,cwd){let force=values.force===!0,dryRun=values["dry-run"]===!0,plan=await planInit({cwd,environments:environmentList(values.environments),tool:toolOf(values.tool),actions:actionsRef(values["actions-ref"]),branch:branchOf(values.branch),force});dryRun||write(plan,force);let steps=nextSteps(plan),files=plan.files.map(f=>({path:f.path,action:f.exists?"overwrite":"create",written:!dryRun,...dryRun?{content:f.content}:{}}));return{report:{operation:"init",environment:"",outcome:dryRun?"dry run":"done",facts:[["root",plan.root],["branch",plan.branch],["environments",plan.environments],["units",plan.units],["actions",plan.actions],["placeholder",plan.placeholder],["files",files],["nextSteps",steps]],problems:[],exit:Exit.ok},text:render(plan,dryRun,steps)}}export{nextSteps,runInit};
