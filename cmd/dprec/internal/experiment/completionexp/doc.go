// Package completionexp holds the completion experiments behind `dprec
// experiment completion-synthetic`, `completion-speed` and
// `completion-privacy`: test RMSE and recovery against the observed
// fraction on synthetic low-rank tensors (CompletionSynthetic), SGD epoch
// throughput on UniformCP tensors (CompletionSpeed), and test RMSE and, on
// a rating log, NDCG@k of the lists against epsilon for the private
// training modes, beside most-popular lists (RunPrivacyExperiment). They
// return tables; the CLI writes them as CSV and plots them. Every run uses
// seeded noise: the experiments measure utility and are NOT private.
package completionexp
