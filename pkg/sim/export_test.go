package sim

import "testing/fstest"

// WeekScenario is BenchmarkSimulateWeek20k's scenario (in "sc"), for the
// benchmarks of packages built on the simulator (pkg/replay's).
func WeekScenario() fstest.MapFS { return weekScenario() }
