package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

func newValidateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate PATH...",
		Short: "Validate NodePool, NodeClaim and EC2NodeClass manifests offline, as the API server would",
		Long: `validate checks every YAML document in the given files and directories against
Joiner's CRDs: OpenAPI schema, defaults, unknown fields and CEL rules, with the
API server's own libraries. Input from karpenter.sh/v1beta1, v1alpha5 and
removed fields (WhenUnderutilized, ttlSecondsAfterEmpty, ...) is answered with
its exact v1 replacement. Documents of other kinds are listed and skipped.
It exits non-zero if any problem is found.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := manifest.NewValidator()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var all manifest.Problems
			checked, skipped := 0, 0
			for _, arg := range args {
				files, err := manifest.ManifestFiles(arg)
				if err != nil {
					return err
				}
				for _, f := range files {
					docs, err := manifest.ParseFile(f)
					var ps manifest.Problems
					if errors.As(err, &ps) {
						all = append(all, ps...)
						continue
					} else if err != nil {
						return err
					}
					for _, d := range docs {
						if !v.Knows(schema.FromAPIVersionAndKind(d.APIVersion, d.Kind)) && len(manifest.Deprecations(d)) == 0 {
							skipped++
							continue
						}
						checked++
						all = append(all, v.Validate(d)...)
					}
				}
			}
			for _, p := range all {
				fmt.Fprintln(out, p.Error())
			}
			fmt.Fprintf(out, "%d objects checked, %d of other kinds skipped, %d problems\n", checked, skipped, len(all))
			if len(all) > 0 {
				return fmt.Errorf("%d problems found", len(all))
			}
			return nil
		},
	}
}
