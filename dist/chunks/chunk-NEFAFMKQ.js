#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{init_define_NYL_YAML_MODULES}from"./chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();import{mkdtempSync,rmSync}from"node:fs";import{tmpdir}from"node:os";import{join}from"node:path";var dir,n=0;function workdir(){return dir??=mkdtempSync(join(process.env.RUNNER_TEMP||tmpdir(),"nyl-")),dir}function workPath(name){return join(workdir(),`${++n}-${name}`)}function removeWorkdir(){if(dir){try{rmSync(dir,{recursive:!0,force:!0,maxRetries:3,retryDelay:20})}catch{}dir=void 0}}init_define_NYL_YAML_MODULES();import{spawn}from"node:child_process";import{readdirSync,readFileSync,writeFileSync}from"node:fs";init_define_NYL_YAML_MODULES();import{accessSync,constants,statSync}from"node:fs";import{delimiter,isAbsolute,join as join2}from"node:path";var found;function bashPath(){if(found!==void 0)return found??void 0;if(found=null,process.platform!=="win32"){for(let dir2 of(process.env.PATH??"").split(delimiter)){if(!dir2||!isAbsolute(dir2))continue;let candidate=join2(dir2,"bash");try{if(accessSync(candidate,constants.X_OK),!statSync(candidate).isFile())continue;found=candidate;break}catch{}}return found??void 0}}var SHELL_SENSITIVE=["BASH_ENV","ENV","SHELLOPTS","BASHOPTS","BASH_XTRACEFD","BASH_COMPAT","BASH_LOADABLES_PATH","CDPATH","GLOBIGNORE","EXECIGNORE","IFS","POSIXLY_CORRECT","PS4","TMOUT","LC_ALL"];function helperShellEnv(env=process.env){let out={};for(let[k,v]of Object.entries(env))v!==void 0&&!SHELL_SENSITIVE.includes(k)&&!k.startsWith("BASH_FUNC_")&&(out[k]=v);return out}var SCRIPT=`
grace_ms=$1; state=$2; live=" "
# A line read into cmd, sig and to, checked: g its group; false when it is none.
parse() {
  g=\${cmd#[+~-]}
  case $g in ''|*[!0-9]*) return 1 ;; esac
  case $sig in ''|*[!A-Z0-9]*) sig=TERM ;; esac
  [ "$to" = leader ] || to=
}
note() {
  case $cmd in
    +*) live="\${live/ $g / }$g "; eval "sig_$g=$sig to_$g=$to sent_$g=" ;;
    -*) live="\${live/ $g / }" ;;
    '~'*) eval "sent_$g=1" ;;
  esac
}
while IFS=' ' read -r cmd sig to; do
  parse || continue
  if [ -z "$state" ]; then note; continue; fi
  case $cmd in
    +*) printf '%s %s%s\\n' "$cmd" "$sig" "\${to:+ $to}" >> "$state" ;;
    *) printf '%s\\n' "$cmd" >> "$state" ;;
  esac
done
# The log lists nyl's lines and those the tool helpers' children appended themselves.
if [ -n "$state" ] && [ -f "$state" ]; then
  while IFS=' ' read -r cmd sig to; do parse && note; done < "$state"
fi
set -- $live
if [ $# -gt 0 ]; then
  for g in "$@"; do
    eval "s=\\$sig_$g t=\\$to_$g d=\\$sent_$g"
    [ -n "$d" ] && continue
    if [ -z "$t" ]; then kill -"$s" -- "-$g" 2>/dev/null; continue; fi
    kill -"$s" -- "$g" 2>/dev/null
    [ -n "$state" ] && printf '~%s\\n' "$g" >> "$state"
  done
  n=$(( (grace_ms + 99) / 100 ))
  while [ $n -gt 0 ]; do
    alive=0
    for g in "$@"; do
      eval "t=\\$to_$g"
      if [ -n "$t" ]; then kill -0 -- "$g" 2>/dev/null && alive=1; else kill -0 -- "-$g" 2>/dev/null && alive=1; fi
    done
    [ $alive -eq 0 ] && break
    sleep 0.1; n=$(( n - 1 ))
  done
  for g in "$@"; do kill -KILL -- "-$g" 2>/dev/null; done
fi
[ -n "$state" ] && rm -f "$state"
exit 0
`,child,settings={graceMs:3e4,stateFile:"auto"},guarded=new Map;function configureWatchdog(opts){settings={...settings,...opts}}function watchdogStateFile(){return settings.stateFile==="auto"&&(settings.stateFile=process.platform==="win32"?"":workPath("groups")),settings.stateFile}function start(){if(child||process.platform==="win32")return child;try{let file=watchdogStateFile();file&&writeFileSync(file,"",{mode:384});let args=["--noprofile","--norc","-c",SCRIPT,"nyl-watchdog",String(settings.graceMs),watchdogStateFile()];child=spawn(bashPath()??"bash",args,{detached:!0,stdio:["pipe","ignore","ignore"],env:helperShellEnv()})}catch{return}return child.on("error",()=>{child=void 0}),child.stdin?.on("error",()=>{}),child.unref(),child.stdin?.unref(),child}function watchdogLog(){let file=watchdogStateFile();return file&&start()?file:""}function noteGuarded(pgid){guarded.set(pgid,"tool")}var stopWords=(stopSignal,target="group")=>`${stopSignal.replace(/^SIG/,"")}${target==="leader"?" leader":""}`;function guard(pgid,stopSignal="SIGTERM",what="tool",target="group"){guarded.set(pgid,what),start()?.stdin?.write(`+${pgid} ${stopWords(stopSignal,target)}
`)}function stopSent(pgid){child?.stdin?.write(`~${pgid}
`)}function forgetGuarded(pgid){guarded.delete(pgid)}function release(pgid){guarded.delete(pgid),child?.stdin?.write(`-${pgid}
`)}function guardedGroups(){return[...guarded].filter(([,w])=>w==="tool").map(([g])=>g)}var SIGNAL_WORD=/^[A-Z0-9]+$/;function stopsListedIn(file){let text;try{text=readFileSync(file,"utf8")}catch{return[]}let live2=new Map;for(let line of text.split(`
`)){let[head="",sig="",to]=line.split(" "),pgid=Number(head.replace(/^[+~-]/,""));if(!Number.isInteger(pgid)||pgid<=0)continue;let listed=live2.get(pgid);if(head.startsWith("-"))live2.delete(pgid);else if(head.startsWith("~"))listed&&(listed.sent=!0);else{live2.delete(pgid);let signal=`SIG${SIGNAL_WORD.test(sig)?sig:"TERM"}`;live2.set(pgid,{pgid,signal,leader:to==="leader",sent:!1})}}return[...live2.values()]}function procStat(pid){let stat;try{stat=readFileSync(`/proc/${pid}/stat`,"utf8")}catch{return}let[state="",,pgrp]=stat.slice(stat.lastIndexOf(")")+2).split(" ");return{state,pgrp:Number(pgrp)}}var running=s=>!!s&&s.state!=="Z"&&s.state!=="X";function found2(target){try{return process.kill(target,0),!0}catch(e){return e.code==="EPERM"}}function groupAlive(pgid){if(!found2(-pgid))return!1;if(process.platform!=="linux")return!0;try{for(let pid of readdirSync("/proc")){if(!/^\d+$/.test(pid))continue;let st=procStat(pid);if(running(st)&&st?.pgrp===pgid)return!0}return!1}catch{return!0}}function processAlive(pid){if(!found2(pid))return!1;if(process.platform!=="linux")return!0;let st=procStat(pid);return!st||running(st)}var stopPending=g=>g.leader?processAlive(g.pgid):groupAlive(g.pgid);init_define_NYL_YAML_MODULES();import{spawn as spawn2}from"node:child_process";var live=new Set,gentle=new Set,liveGroups=new Set;function adoptGroup(pgid){liveGroups.add(pgid)}function dropGroup(pgid){liveGroups.delete(pgid)}function spawnGroup(cmd,args,opts){let{guarded:guarded2,stopSignal,stopTarget,endGently:soft,...spawnOpts}=opts,child2=spawn2(cmd,args,{...spawnOpts,detached:!0}),pid=child2.pid;return pid===void 0||(live.add(child2),soft&&gentle.add(child2),guarded2&&guard(pid,stopSignal,guarded2,stopTarget),child2.once("exit",()=>{live.delete(child2),gentle.delete(child2),guarded2&&release(pid)})),child2}async function endGently(ms=1e3,pids){let running2=[...gentle].filter(c=>c.exitCode===null&&c.signalCode===null),chosen=pids?running2.filter(c=>c.pid!==void 0&&pids.includes(c.pid)):running2;if(!chosen.length)return;for(let c of chosen)signalGroup(c.pid,"SIGTERM");let timer;await Promise.race([Promise.all(chosen.map(c=>new Promise(resolve=>c.once("exit",resolve)))),new Promise(resolve=>{timer=setTimeout(resolve,ms)})]),clearTimeout(timer);for(let c of chosen)gentle.has(c)&&signalGroup(c.pid,"SIGKILL")}function signalGroup(pid,sig){if(pid!==void 0)try{process.kill(-pid,sig)}catch{try{process.kill(pid,sig)}catch{}}}function signalLeader(pid,sig){if(pid!==void 0)try{process.kill(pid,sig)}catch{}}function signalStop(g){g.leader?signalLeader(g.pgid,g.signal):signalGroup(g.pgid,g.signal)}function endAll(){for(let c of live)signalGroup(c.pid,"SIGKILL");for(let g of liveGroups)signalGroup(g,"SIGKILL");live.clear(),liveGroups.clear()}init_define_NYL_YAML_MODULES();var gitStats={spawns:0,commands:[]};function gitEnv(extra){return{...process.env,GIT_TERMINAL_PROMPT:"0",GIT_PAGER:"cat",LC_ALL:"C",GIT_FLUSH:"1",...extra}}function subcommand(args){for(let i=0;i<args.length;i++)if(args[i]==="-c")i++;else return args[i];return""}function runGit(args,opts){return gitStats.spawns++,gitStats.commands.push(subcommand(args)),new Promise((resolve,reject)=>{let child2=spawnGroup("git",args,{cwd:opts.cwd,env:gitEnv(opts.env),stdio:["pipe","pipe","pipe"],guarded:opts.guarded?"git":void 0,endGently:opts.endGently});opts.started?.(child2.pid);let out=[],err=[],ended,settled=!1,timers=[],done=(code,signal)=>{if(settled)return;settled=!0;for(let t of timers)clearTimeout(t);unsubscribe?.();let stderr=Buffer.concat(err).toString("utf8");resolve({code,stdout:Buffer.concat(out),stderr,ended,...signal?{signal}:{}})},end=why=>{settled||(ended=why,signalGroup(child2.pid,"SIGTERM"),setTimeout(()=>signalGroup(child2.pid,"SIGKILL"),1e3).unref(),done(124))};opts.timeoutMs!==void 0&&timers.push(setTimeout(()=>end("timeout"),Math.max(1,opts.timeoutMs)));let unsubscribe=opts.cancellation?.onCancel(()=>{timers.push(setTimeout(()=>end("cancelled"),opts.cancelGraceMs??1e3))});child2.stdout?.on("data",d=>out.push(d)),child2.stderr?.on("data",d=>err.push(d)),child2.on("error",e=>{if(!settled){settled=!0;for(let t of timers)clearTimeout(t);unsubscribe?.(),reject(e)}}),child2.on("close",(code,signal)=>done(code??128,signal)),child2.stdin?.on("error",()=>{}),child2.stdin?.end(opts.input??"")})}init_define_NYL_YAML_MODULES();var UNITS={ms:1,s:1e3,m:6e4,h:36e5,d:864e5},PART=/(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;function parseDuration(text){let s=text.trim();if(s==="")return;let total=0;for(PART.lastIndex=0;PART.lastIndex<s.length;){let at=PART.lastIndex,m=PART.exec(s);if(!m||m.index!==at)return;total+=Number(m[1])*UNITS[m[2]]}return Math.round(total)}function formatDuration(ms){if(ms<1e3)return`${ms}ms`;let s=ms/1e3;if(s<60)return`${s<10?s.toFixed(1):Math.round(s)}s`;let m=Math.floor(s/60),rest=Math.round(s-m*60);if(m<60)return rest?`${m}m${rest}s`:`${m}m`;let h=Math.floor(m/60);return m%60?`${h}h${m%60}m`:`${h}h`}init_define_NYL_YAML_MODULES();var DEFAULT_CONFIG_FILES=["nyl.yaml","nyl.yml"];init_define_NYL_YAML_MODULES();var SAFE_NAME=/^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,98}[A-Za-z0-9_-])?$/;function isSafeName(s){return SAFE_NAME.test(s)&&!s.includes("..")&&!s.endsWith(".lock")}export{DEFAULT_CONFIG_FILES,bashPath,SHELL_SENSITIVE,helperShellEnv,workPath,removeWorkdir,configureWatchdog,watchdogStateFile,watchdogLog,noteGuarded,stopWords,stopSent,forgetGuarded,release,guardedGroups,stopsListedIn,groupAlive,stopPending,adoptGroup,dropGroup,spawnGroup,endGently,signalGroup,signalLeader,signalStop,endAll,gitStats,gitEnv,runGit,parseDuration,formatDuration,SAFE_NAME,isSafeName};
