package main

import "github.com/urfave/cli/v2"

// commandList returns dprec's top-level commands, freshly built, in the
// order "dprec --help" lists them. Every command has a constructor in its
// own file (capeCmd in cape.go, trainCmd in train.go, ...); adding a command
// means adding its constructor here.
func commandList() []*cli.Command {
	return []*cli.Command{
		capeCmd(),
		dataGroup(),
		evalCmd(),
		experimentGroup(),
		exportCmd(),
		inspectCmd(),
		pcaCmd(),
		predictCmd(),
		recommendCmd(),
		similarCmd(),
		spectralCmd(),
		trainCmd(),
		tuneCmd(),
	}
}

// dataGroup groups the rating-log commands (data.go, datasynth.go).
func dataGroup() *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "inspect, split, convert and synthesise rating logs",
		Subcommands: []*cli.Command{
			datastatsCmd(),
			datasplitCmd(),
			dataconvertCmd(),
			datasynthCmd(),
		},
	}
}

// experimentGroup groups the paper reproductions (exp_*.go).
func experimentGroup() *cli.Command {
	return &cli.Command{
		Name:  "experiment",
		Usage: "reproduce the papers' experiments (CSV tables and plots)",
		Subcommands: []*cli.Command{
			expCapeCmd(),
			expCompletionSyntheticCmd(),
			expCompletionSpeedCmd(),
			expPrivacyCmd(),
			expSpectralCmd(),
		},
	}
}
