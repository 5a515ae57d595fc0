// ESM entry: the same objects as the CommonJS entry.
import jsprof from './index.js'

export const { Profiler, fromCpuProfile, attribute, summarize } = jsprof
export const { toCpuProfile, toGeckoProfile, toSpeedscope, toPprof, toOtlpProfiles, toCollapsed, toFlameGraph } = jsprof
export const { profileRequests, startContinuous, watchStalls, pyroscopeExporter, otlpExporter } = jsprof
export const { resolveSourceMaps } = jsprof
export const { HeapProfiler, fromHeapProfile, toHeapProfile } = jsprof
export const { withLabels, setLabels, getLabels } = jsprof
export default jsprof
