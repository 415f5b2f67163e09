/** A `.yml` file imported as its text: scripts/build.mjs bundles it with esbuild's `text` loader. */
declare module '*.yml' {
  const text: string;
  export default text;
}
