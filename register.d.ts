// jsprof-node/register is loaded for its effect (`--require jsprof-node/register`): it exports nothing.
export {}
