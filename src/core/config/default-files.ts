/** Where the configuration is when --config does not say: the first of these in the source commit. */
export const DEFAULT_CONFIG_FILES = ['nyl.yaml', 'nyl.yml'];
