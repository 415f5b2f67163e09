const SECRET_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH)/i;

/**
 * Replaces values of secret-looking environment variables with `***` in text that is about to
 * be stored (log tails, failure reasons), so secrets never reach refs or summaries.
 */
export function secretMasker(env: NodeJS.ProcessEnv = process.env): (text: string) => string {
  const values = Object.entries(env)
    .filter(([k, v]) => SECRET_NAME.test(k) && typeof v === 'string' && v.length >= 4)
    .map(([, v]) => v as string)
    .sort((a, b) => b.length - a.length);
  if (!values.length) return (t) => t;
  return (text) => {
    let out = text;
    for (const v of values) if (out.includes(v)) out = out.split(v).join('***');
    return out;
  };
}
