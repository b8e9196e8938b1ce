package main

import "github.com/dprec/dprec"

// trainNoUser is the one placeholder id of a user-level model's user mode
// (dprec.NoUserID): the file holds no user dictionary, whoever is in the log.
const trainNoUser = dprec.NoUserID

// trainUserCountNote labels the exact number of training ratings of a
// user-level run, printed to the operator like the drop counts.
const trainUserCountNote = "exact count after the per-user bound, for you only: not released, the model file holds no count"
