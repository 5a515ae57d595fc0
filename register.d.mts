// jsprof-node/register is loaded for its effect (`--import jsprof-node/register`): it exports nothing.
export {}
