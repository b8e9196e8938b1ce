//go:build race

package completion

// raceEnabled skips the minutes-long MovieLens checks and the slowest
// convergence and noise checks under the race detector; .ci/run runs them
// without it.
const raceEnabled = true
