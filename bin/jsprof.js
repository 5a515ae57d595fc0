#!/usr/bin/env node
'use strict'
// The `jsprof` command: see `jsprof --help` and docs/cli.md.
require('../lib/cli/main').main()
