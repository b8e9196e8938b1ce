package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/otd/cape"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/mat"
)

// spectralSitesFlag splits the input across S sites and runs capeAGN
// (Imtiaz and Sarwate 2018b Algorithm 3) with the roles as goroutines over the in-process
// transport.
var spectralSitesFlag = &cli.IntFlag{
	Name:     "sites",
	Category: "Privacy",
	Usage:    "split the input into S contiguous, equal-sized sites and run capeAGN (Imtiaz and Sarwate 2018, Algorithm 3: correlated-noise distributed AGN; --method agn, --model stm or mog) in process; 0 or 1: centralised",
}

// spectralSites runs capeAGN over S sites cut from in and returns the
// result in otd.Result form with the protocol's privacy report; seeded
// (--seed), the noise and the power method's restarts come from seed.
func spectralSites(in *otd.Input, opts otd.FitOptions, S int, seed uint64, seeded bool) (*otd.Result, error) {
	if opts.Method != otd.MethodAGN {
		return nil, cli.Exit(fmt.Sprintf("--sites runs capeAGN: use --method agn (got %q)", opts.Method), exitUsage)
	}
	if opts.Model != otd.ModelSTM && opts.Model != otd.ModelMoG {
		return nil, cli.Exit("--sites supports --model stm and mog (capeAGN)", exitUsage)
	}
	var parts []*cape.SiteData
	var d int
	var vocab []string
	switch {
	case in.Corpus != nil:
		cs, err := spectralSplitCorpus(in.Corpus, S)
		if err != nil {
			return nil, err
		}
		for _, sc := range cs {
			parts = append(parts, &cape.SiteData{Corpus: sc})
		}
		d = in.Corpus.V()
		vocab = in.Corpus.Vocab
	case in.Rows != nil:
		n, cols := in.Rows.Dims()
		if n < S {
			return nil, fmt.Errorf("%d rows cannot be split into %d sites", n, S)
		}
		for s := 0; s < S; s++ {
			lo, hi := s*n/S, (s+1)*n/S
			parts = append(parts, &cape.SiteData{Rows: mat.DenseCopyOf(in.Rows.Slice(lo, hi, 0, cols))})
		}
		d = cols
	}
	sites := make([]cape.SiteInput, S)
	for s := range sites {
		sites[s] = cape.SiteInput{Data: parts[s], Epsilon: opts.Epsilon, Delta: opts.Delta}
	}
	model := cape.ModelSTM
	if opts.Model == otd.ModelMoG {
		model = cape.ModelMOG
	}
	job := cape.Job{Kind: cape.JobAGN, D: d, K: opts.K, Model: model, Sigma2: opts.Sigma2}
	ropts := cape.RunOptions{Timeout: time.Minute}
	var tpmSrc rand.Source
	if seeded {
		ropts.Seeded, ropts.Seed = true, seed
		tpmSrc = rand.NewPCG(seed, 0x7470) // power-method restarts only
	} else {
		tpmSrc = perturb.SecureSource()
	}
	res, run, err := cape.CapeAGN(context.Background(), job, sites, ropts, opts.TPM, tpmSrc)
	if err != nil {
		return nil, err
	}
	rep := run.Report()
	rep.Notes = append(rep.Notes, fmt.Sprintf("input split into %d contiguous sites of about %d records each (simulated consortium; the roles ran in one process over the in-process transport)", S, parts[0].N()))
	out := &otd.Result{Model: opts.Model, Method: "cape-agn", Weights: res.Weights, RawWeights: res.RawWeights, Zero: res.Zero, A: res.A, Vocab: vocab, Path: "distributed (K x K x K per site)", Report: rep}
	return out, nil
}

// spectralSplitCorpus cuts a corpus into S contiguous blocks of documents
// sharing its vocabulary.
func spectralSplitCorpus(cp *data.Corpus, S int) ([]*data.Corpus, error) {
	n := cp.NumDocs()
	if n < S {
		return nil, fmt.Errorf("%d documents cannot be split into %d sites", n, S)
	}
	out := make([]*data.Corpus, S)
	for s := 0; s < S; s++ {
		lo, hi := s*n/S, (s+1)*n/S
		base := cp.DocPtr[lo]
		ptr := make([]int64, hi-lo+1)
		for i := range ptr {
			ptr[i] = cp.DocPtr[lo+i] - base
		}
		end := cp.DocPtr[hi]
		out[s] = &data.Corpus{Vocab: cp.Vocab, DocPtr: ptr, Words: cp.Words[base:end], Counts: cp.Counts[base:end]}
	}
	return out, nil
}
