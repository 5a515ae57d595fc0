'use strict'
// jsprof-node: the JS Self-Profiling API for Node.js. Each lib/ module is one concept; this file
// only gathers what is public.

const { Profiler } = require('./lib/profiler')
const { fromCpuProfile } = require('./lib/cpuprofile')
const { profileRequests } = require('./lib/requests')
const { startContinuous } = require('./lib/continuous')
const { pyroscopeExporter } = require('./lib/backend')

module.exports = { Profiler, fromCpuProfile, profileRequests, startContinuous, pyroscopeExporter }
