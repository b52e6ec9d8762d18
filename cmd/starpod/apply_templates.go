package main

// This file defines the flag that names the pod templates of more kinds.

import (
	"github.com/starpod/starpod/internal/workload"
)

// podTemplateRules parses --pod-template values.
func podTemplateRules(flags []string) (workload.Options, error) {
	var opts workload.Options
	for _, s := range flags {
		r, err := workload.ParseRule(s)
		if err != nil {
			return opts, usagef("--pod-template: %v", err)
		}
		opts.Rules = append(opts.Rules, r)
	}
	return opts, nil
}
