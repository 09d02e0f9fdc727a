//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

const base = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: %s
spec:
  template:
    spec:
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot"]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  disruption:
    consolidateAfter: 1m
%s`

// TestOfflineValidationAgreesWithAPIServer: every example, legacy input and
// a set of bad manifests is accepted by Joiner's offline validator exactly
// when the real API server accepts it, with the same CEL message, and the
// defaults the server stores are the ones the validator applies.
func TestOfflineValidationAgreesWithAPIServer(t *testing.T) {
	v, err := manifest.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	var docs []*manifest.Document
	files, err := manifest.ManifestFiles(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		ds, err := manifest.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	bad := map[string]string{
		"schedule-without-duration": "    budgets:\n      - nodes: \"10%\"\n        schedule: \"0 9 * * mon-fri\"\n",
		"nodes-101":                 "    budgets:\n      - nodes: \"101%\"\n",
		"reason":                    "    budgets:\n      - nodes: \"1\"\n        reasons: [Expired]\n",
		"policy":                    "    consolidationPolicy: WhenUnderutilized\n",
		"balanced":                  "    consolidationPolicy: Balanced\n",
		"weekday-window":            "    budgets:\n      - nodes: \"10%\"\n        reasons: [Drifted]\n        schedule: \"0 9 * * mon-fri\"\n        duration: 8h\n",
	}
	for name, extra := range bad {
		y := fmt.Sprintf(base, "bad-"+name, extra)
		ds, err := manifest.Parse(name+".yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	for _, gt := range []string{`["3", "4"]`, `["-1"]`, `["x"]`} {
		y := strings.Replace(fmt.Sprintf(base, "gt-"+fmt.Sprint(len(docs)), ""), `operator: In
          values: ["spot"]`, "operator: Gt\n          values: "+gt, 1)
		y = strings.Replace(y, "karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-cpu", 1)
		ds, err := manifest.Parse("gt.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}

	ctx := context.Background()
	checked := 0
	for i, d := range docs {
		if !strings.HasPrefix(d.APIVersion, "karpenter.") {
			continue
		}
		checked++
		raw := runtime.DeepCopyJSON(d.Object)
		// Names repeat across examples; the server needs them unique.
		u := &unstructured.Unstructured{Object: raw}
		u.SetName(fmt.Sprintf("%s-%d", u.GetName(), i))
		offline := v.Validate(d)
		// A dry run: the server validates and defaults, stores nothing, and
		// answers with the object as it would have stored it.
		serverErr := k8s.Create(ctx, u, client.DryRunAll)
		t.Run(fmt.Sprintf("%s/%d/%s", filepath.Base(d.File), d.Doc, d.Name), func(t *testing.T) {
			if (len(offline) == 0) != (serverErr == nil) {
				t.Fatalf("disagree: offline %v, API server %v", offline, serverErr)
			}
			if serverErr != nil {
				// After a schema error the server skips the CEL rules; the
				// validator runs them anyway (all problems at once), so
				// there it must report at least the server's fields.
				skipped := strings.Contains(serverErr.Error(), "validation rules were not checked")
				for _, p := range offline {
					if p.Deprecated || p.Field == "" || skipped {
						continue
					}
					// Each CEL message the validator reports, the server reports too.
					if strings.HasPrefix(p.Message, "Invalid value: ") && !strings.Contains(p.Message, "should match") &&
						!strings.Contains(serverErr.Error(), strings.TrimPrefix(p.Message, "Invalid value: ")) {
						t.Errorf("offline says %q; server said %v", p.Message, serverErr)
					}
				}
				if skipped {
					var status *apierrors.StatusError
					if !errors.As(serverErr, &status) || status.ErrStatus.Details == nil {
						t.Fatalf("server error without causes: %v", serverErr)
					}
					for _, c := range status.ErrStatus.Details.Causes {
						if c.Field == "" || c.Field == "<nil>" {
							continue
						}
						found := false // at the field, or more precisely below it
						for _, p := range offline {
							found = found || p.Field == c.Field || strings.HasPrefix(p.Field, c.Field+".")
						}
						if !found {
							t.Errorf("server found %s at %s; offline did not: %v", c.Message, c.Field, offline)
						}
					}
				}
				return
			}
			if !reflect.DeepEqual(u.Object["spec"], d.Object["spec"]) {
				t.Errorf("defaults differ:\nserver:  %v\noffline: %v", u.Object["spec"], d.Object["spec"])
			}
		})
	}
	if checked < 25 {
		t.Errorf("only %d objects checked", checked)
	}
}
