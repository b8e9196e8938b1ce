package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/dprec/dprec/otd/cape"
	"github.com/dprec/dprec/perturb"
)

// capePrintTraffic prints the per-role traffic of a CAPE run.
func capePrintTraffic(w io.Writer, t map[cape.Role]cape.Traffic) {
	roles := make([]cape.Role, 0, len(t))
	for r := range t {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	fmt.Fprintln(w, "traffic (values sent packed / as dense objects, bytes):")
	for _, r := range roles {
		x := t[r]
		fmt.Fprintf(w, "  %-11s sent %d msgs, %d values (%d dense), %d bytes; received %d values\n", r, x.SentMessages, x.SentValues, x.SentDense, x.SentBytes, x.RecvValues)
	}
}

// capePrintReport prints a privacy report.
func capePrintReport(w io.Writer, r *perturb.Report) {
	fmt.Fprintf(w, "privacy: %s, per-site (epsilon, delta) up to (%s, %s), noise %s\n", r.Mode, fmtFloat(r.Epsilon), fmtFloat(r.Delta), r.Randomness)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
}
