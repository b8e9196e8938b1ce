package completion

// Settings configure training. (Placeholder type: the trainer issue replaces
// this file with the full settings.)
type Settings struct{}
