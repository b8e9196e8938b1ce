//go:build !race

package completion

const raceEnabled = false
