/** A unit's outputs by key, as its receipt records them. */
export type Outputs = Record<string, string>;
