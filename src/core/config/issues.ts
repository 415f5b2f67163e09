import type { Document, LineCounter } from 'yaml';
import type { $ZodIssue, $ZodType } from 'zod/v4/core';
import { type Problem, problem } from '../util/errors.js';
import { locate } from './yaml-read.js';

/** The fields an object in the schema allows at `path` (optional wrappers and lists looked through). */
function allowedKeys(schema: $ZodType, path: PropertyKey[]): string[] {
  type Def = { shape?: Record<string, $ZodType>; innerType?: $ZodType; element?: $ZodType };
  const defOf = (x: $ZodType | undefined) => x?._zod.def as Def | undefined;
  const unwrap = (x: $ZodType | undefined) => {
    for (let d = defOf(x); d?.innerType || d?.element; d = defOf(x)) x = d.innerType ?? d.element;
    return x;
  };
  let s: $ZodType | undefined = schema;
  for (const p of path) s = unwrap(defOf(s)?.shape?.[String(p)]);
  const shape = defOf(s)?.shape;
  return shape ? Object.keys(shape) : [];
}

export function issueProblem(
  file: string,
  doc: Document,
  lc: LineCounter,
  what: string,
  issue: $ZodIssue,
  schema: $ZodType,
): Problem {
  const path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
  const field = path.join('.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] as string;
    const full = [...path, key].join('.');
    const allowed = allowedKeys(schema, issue.path);
    return problem('NYL-CONFIG-FIELD', `${what}: unknown field ${JSON.stringify(key)}`, {
      subject: `${file}:${locate(doc, lc, path, key)} ${full}`,
      fix: `remove ${full} or correct its spelling; allowed here: ${allowed.join(', ')}`,
    });
  }
  const line = locate(doc, lc, path);
  const subject = `${file}:${line} ${field || '(document)'}`;
  if (issue.code === 'invalid_type' && doc.getIn(path) === undefined && !doc.hasIn(path)) {
    return problem('NYL-CONFIG-INVALID', `${what}: required field ${field} is missing`, {
      subject,
      fix: `add ${field} to the ${what.split(' ')[0]} document`,
    });
  }
  if (issue.message.startsWith('is not a duration')) {
    const value = doc.getIn(path);
    return problem('NYL-CONFIG-DURATION', `${what}: ${field} ${JSON.stringify(value)} ${issue.message}`, {
      subject,
      fix: `set ${field} to a duration such as 30s, 10m or 1h30m`,
    });
  }
  if (issue.message.startsWith('must be a safe git ref component')) {
    const value = doc.getIn(path);
    return problem('NYL-CONFIG-NAME', `${what}: ${field} ${JSON.stringify(value)} ${issue.message}`, {
      subject,
      fix: `rename it using ${'letters, digits, ".", "_" and "-"'}`,
    });
  }
  return problem('NYL-CONFIG-INVALID', `${what}: ${field || 'document'}: ${issue.message}`, {
    subject,
    fix: `correct ${field || 'the document'} in ${file} at line ${line}`,
  });
}
