/** A secret-looking variable name: one of these words as a part of it (GITHUB_TOKEN, db_password; not GIT_AUTHOR_NAME). */
const SECRET_NAME =
  /(^|_)(TOKENS?|SECRETS?|PASSWORDS?|PASSWD|PASSPHRASE|CREDENTIALS?|PRIVATE|AUTH|PAT)(_|$)|API_?KEY|ACCESS_?KEY|SECRET/i;
/** Shorter values are not masked (they would mask ordinary words); shorter fragments at a cut neither. */
const MIN_SECRET = 4;
const MASK = '***';

/**
 * The one masking step for every string on its way out of nyl: into a ref (documents, commit
 * messages), onto stdout/stderr and `--json`, into a job summary, an annotation or an output.
 * It knows the values of secret-looking environment variables (…TOKEN, …PASSWORD, …KEY, …) and
 * every value added later (sensitive outputs), each also as JSON writes it (quotes and
 * backslashes escaped) and, for multi-line values, line by line. A text cut anywhere (a log's
 * head and tail) may start with the end of a secret or end with its start: those fragments are
 * masked too.
 */
export class Masker {
  private values: string[] = [];
  /** Counts the times it learned a value: what it masked before may read otherwise now. */
  generation = 0;

  static fromEnv(env: NodeJS.ProcessEnv = process.env): Masker {
    const m = new Masker();
    for (const [k, v] of Object.entries(env)) if (SECRET_NAME.test(k) && typeof v === 'string') m.add(v);
    return m;
  }

  /** Adds a value to mask from now on (and its JSON-escaped form, and its lines). */
  add(value: string): void {
    const forms = new Set<string>([value, JSON.stringify(value).slice(1, -1)]);
    for (const line of value.split(/\r?\n/)) if (line.trim().length >= 8) forms.add(line);
    let grew = false;
    for (const f of forms)
      if (f.length >= MIN_SECRET && !this.values.includes(f)) {
        this.values.push(f);
        grew = true;
      }
    if (!grew) return;
    this.values.sort((a, b) => b.length - a.length);
    this.generation++;
  }

  /** Every value it masks (to register them with a CI's own log masking). */
  get secrets(): readonly string[] {
    return this.values;
  }

  contains(text: string): boolean {
    return this.values.some((v) => text.includes(v));
  }

  mask = (text: string): string => {
    if (!this.values.length || !text) return text;
    let out = text;
    for (const v of this.values) if (out.includes(v)) out = out.split(v).join(MASK);
    return out;
  };

  /**
   * For a piece cut out of a longer text (a log's head or tail): whole values, and the end of a
   * secret at its start or the start of one at its end.
   */
  maskPiece = (text: string): string => {
    let out = this.mask(text);
    if (!this.values.length || !out) return out;
    for (const v of this.values) {
      for (let k = v.length - 1; k >= MIN_SECRET; k--)
        if (out.startsWith(v.slice(-k))) {
          out = MASK + out.slice(k);
          break;
        }
      for (let k = v.length - 1; k >= MIN_SECRET; k--)
        if (out.endsWith(v.slice(0, k))) {
          out = out.slice(0, out.length - k) + MASK;
          break;
        }
    }
    return out;
  };
}

/** The masker of this process: environment secrets, then sensitive values drivers add. */
export const masker = Masker.fromEnv();
