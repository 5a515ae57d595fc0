// ESM entry: the same objects as the CommonJS entry.
import jsprof from './index.js'

export const { Profiler, fromCpuProfile, profileRequests, startContinuous, pyroscopeExporter } = jsprof
export default jsprof
