/**
 * GitHub Actions expressions, as far as the workflows `nyl init` writes use them: `${{ … }}` in
 * `with:`, `env:` and `if:`, with `==`, `!=`, `&&`, `||`, `!`, parentheses, string literals,
 * booleans, context paths (`github.event_name`, `inputs.environment`, `needs.dev.result`,
 * `steps.nyl.outputs.result`) and the status functions. Anything else is an error naming the
 * expression, so a workflow that grows a construct this does not know fails the tutorial test
 * instead of being misread.
 */

export type Value = string | boolean | number | null;

export interface Scope {
  /** A context path's value (`['inputs', 'environment']`); null when it has none. */
  lookup(path: string[]): Value;
  /** `success()`: every earlier step (job: every needed job) succeeded. */
  success: boolean;
}

const TOKEN = /\s*(\(|\)|==|!=|&&|\|\||!|'(?:[^']|'')*'|[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*(?:\(\))?|\d+)/y;

function tokens(text: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    if (/^\s*$/.test(text.slice(TOKEN.lastIndex))) break;
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (!m) throw new Error(`expression ${JSON.stringify(text)}: cannot read it at ${JSON.stringify(text.slice(at))}`);
    out.push(m[1] as string);
  }
  return out;
}

const truthy = (v: Value) => v !== null && v !== false && v !== '' && v !== 0;

/** Loose equality as GitHub does it for the values these workflows compare (strings case-insensitively). */
function equal(a: Value, b: Value): boolean {
  if (typeof a === 'string' && typeof b === 'string') return a.toLowerCase() === b.toLowerCase();
  if (a === null || b === null) return a === b;
  return String(a).toLowerCase() === String(b).toLowerCase();
}

/** Evaluates one expression (the text between `${{` and `}}`). */
export function evaluate(text: string, scope: Scope): Value {
  const ts = tokens(text);
  let i = 0;
  const fail = (why: string): never => {
    throw new Error(`expression ${JSON.stringify(text)}: ${why}`);
  };
  const primary = (): Value => {
    const t = ts[i++] ?? fail('ends too early');
    if (t === '(') {
      const v = or();
      if (ts[i++] !== ')') fail('a parenthesis is not closed');
      return v;
    }
    if (t.startsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
    if (/^\d+$/.test(t)) return Number(t);
    if (t === 'true' || t === 'false') return t === 'true';
    if (t === 'null') return null;
    if (t === 'always()') return true;
    if (t === 'cancelled()') return false;
    if (t === 'success()') return scope.success;
    if (t === 'failure()') return !scope.success;
    if (t.endsWith('()')) return fail(`unknown function ${t}`);
    return scope.lookup(t.split('.'));
  };
  const unary = (): Value => {
    if (ts[i] !== '!') return compare();
    i++;
    return !truthy(unary());
  };
  const compare = (): Value => {
    const a = primary();
    const op = ts[i];
    if (op !== '==' && op !== '!=') return a;
    i++;
    const b = primary();
    return op === '==' ? equal(a, b) : !equal(a, b);
  };
  const and = (): Value => {
    let v = unary();
    while (ts[i] === '&&') {
      i++;
      const r = unary();
      v = truthy(v) ? r : v;
    }
    return v;
  };
  const or = (): Value => {
    let v = and();
    while (ts[i] === '||') {
      i++;
      const r = and();
      v = truthy(v) ? v : r;
    }
    return v;
  };
  const v = or();
  if (i < ts.length) fail(`unexpected ${ts[i]}`);
  return v;
}

const asText = (v: Value) => (v === null ? '' : String(v));

/** A `with:` or `env:` value: its `${{ … }}` parts replaced by their values. */
export function interpolate(value: unknown, scope: Scope): string {
  return String(value ?? '').replace(/\$\{\{(.*?)\}\}/g, (_, e: string) => asText(evaluate(e, scope)));
}

/**
 * An `if:` condition (with or without `${{ }}`); absent, `success()`. As on GitHub, a condition
 * that calls no status function holds only when `success()` does too.
 */
export function condition(value: unknown, scope: Scope): boolean {
  if (value === undefined || value === null) return scope.success;
  if (typeof value === 'boolean') return value && scope.success;
  const text = String(value).trim();
  const expr = /^\$\{\{(.*)\}\}$/s.exec(text)?.[1] ?? text;
  const status = /\b(always|cancelled|success|failure)\(\)/.test(expr);
  return (status || scope.success) && truthy(evaluate(expr, scope));
}
