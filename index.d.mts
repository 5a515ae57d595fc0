// Types of the ESM entry (index.mjs): the same declarations as the CommonJS entry (index.d.ts), read as
// ESM so `import` under node16/nodenext and bundlers is typed as what index.mjs really is.
import * as jsprof from './index.js'

export * from './index.js'
export default jsprof
