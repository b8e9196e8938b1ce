// Package pipeline runs dprec jobs as Apache Beam pipelines: statistics of
// a rating log, non-private ALS training driven sweep by sweep from Go,
// evaluation and batch top-N recommendation (issue 22).
//
// The math is the main module's: a rating log is read shard by shard with
// package data's loader, every ALS row is solved by completion.RowSystem
// (the kernel Train's ALS uses), the model is initialised by
// completion.InitModel and saved with models.Save, and eval and recommend
// call package models' predictor. The pipelines only move the data.
//
// Order of operations. Train's ALS sums each row's normal equations over
// the row's ratings in storage order (the order of first appearance in the
// log). GroupByKey hands a row's ratings over in no fixed order, so every
// rating carries its position (file index and position in that file's
// store) and a row's ratings are sorted by it before they are summed: with
// the same initial model and global mean the pipelines reproduce Train's
// bits. The global mean is a combine (summed in bundle order); it is exact,
// and so the same as Train's, whenever the partial sums of the ratings are
// (ratings on a grid of halves, as in MovieLens, below 2^52 in total).
//
// Every DoFn, combiner and element type is registered in init(); a binary
// built on this package must call beam.Init() after parsing its flags.
package pipeline
