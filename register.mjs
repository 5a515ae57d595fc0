// jsprof-node/register for `node --import jsprof-node/register` (an ES module app): the same start as
// the CommonJS entry, which it loads (docs/production.md#zero-code-jsprof-noderegister).
import './register.js'
