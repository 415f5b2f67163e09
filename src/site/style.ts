/** site.css: the one stylesheet next to the pages. Calm and dense; light and dark; tables scroll on a phone. */
export const SITE_CSS = `:root {
  color-scheme: light dark;
  --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --panel: #f6f8fa; --line: #d1d9e0; --link: #0550ae;
  --failed: #cf222e; --uncertain: #9a6700; --approval: #8250df; --drifted: #bf3989; --held: #57606a; --ok: #1a7f37;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --panel: #151b23; --line: #3d444d; --link: #4493f8;
    --failed: #ff7b72; --uncertain: #d29922; --approval: #ab7df8; --drifted: #f778ba; --held: #9198a1; --ok: #3fb950;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, main, footer { max-width: 72rem; margin: 0 auto; padding: 0 1rem; }
header { padding-top: .75rem; }
footer { color: var(--muted); font-size: 12px; padding-bottom: 2rem; }
a { color: var(--link); }
a:focus-visible { outline: 2px solid var(--link); outline-offset: 2px; }
h1 { font-size: 1.4rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; }
h3 { font-size: 1rem; margin: 1rem 0 .25rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.crumbs { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem; color: var(--muted); }
.crumbs li + li::before { content: "›"; margin-right: .25rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; margin: .25rem 0 1rem; }
caption { text-align: left; color: var(--muted); padding: .25rem 0; }
th, td { text-align: left; vertical-align: top; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td { overflow-wrap: break-word; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0 0 1rem; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.st { font-weight: 600; white-space: nowrap; }
.st-failed, .st-lost { color: var(--failed); }
.st-uncertain, .st-unimported, .st-cancelled { color: var(--uncertain); }
.st-awaiting-approval { color: var(--approval); }
.st-drifted { color: var(--drifted); }
.st-held { color: var(--held); }
.st-succeeded, .st-executed, .st-current, .st-recovered { color: var(--ok); }
.needs { border: 1px solid var(--failed); border-radius: 6px; padding: 0 .75rem; }
.calm { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; }
details { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0; }
summary { cursor: pointer; padding: .4rem .6rem; background: var(--panel); }
pre { margin: 0; padding: .6rem; overflow-x: auto; white-space: pre; }
.pages { display: flex; flex-wrap: wrap; gap: .5rem; list-style: none; padding: 0; }
.muted { color: var(--muted); }
@media (max-width: 40rem) {
  .facts { grid-template-columns: 1fr; }
  .facts dd { margin-bottom: .3rem; }
}
`;
