package main

import "github.com/urfave/cli/v2"

// Command groups whose subcommands live in several files: each file adds
// its subcommands from its own init function (all inits run before main).
var (
	dataCmd = &cli.Command{
		Name:  "data",
		Usage: "inspect, split, convert and synthesise rating logs",
	}
	experimentCmd = &cli.Command{
		Name:  "experiment",
		Usage: "reproduce the papers' experiments (CSV tables and plots)",
	}
)

func init() {
	register(dataCmd)
	register(experimentCmd)
}
