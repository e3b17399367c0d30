// Types of node-flags.mjs, for the tests that check the start script, the unit and the image use them.
export declare const NODE_FLAGS: readonly string[];
