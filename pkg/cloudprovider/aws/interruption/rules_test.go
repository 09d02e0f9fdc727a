package interruption

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestQueueTemplateSendsWhatIsParsed: the EventBridge rules of
// docs/aws/interruption-queue.yaml (what an operator deploys) send
// exactly the (source, detail-type) pairs this package parses, all to the
// template's queue — a rule for a kind the parser drops would fill the
// queue with messages deleted unread; a kind without a rule never comes.
func TestQueueTemplateSendsWhatIsParsed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "aws", "interruption-queue.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				EventPattern struct {
					Source     []string `json:"source"`
					DetailType []string `json:"detail-type"`
				}
				Targets []struct {
					Arn map[string][]string `json:"Arn"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &tmpl); err != nil {
		t.Fatalf("docs/aws/interruption-queue.yaml: %v", err)
	}
	var got []string
	for name, r := range tmpl.Resources {
		if r.Type != "AWS::Events::Rule" {
			continue
		}
		for _, s := range r.Properties.EventPattern.Source {
			for _, d := range r.Properties.EventPattern.DetailType {
				got = append(got, s+" / "+d)
			}
		}
		if len(r.Properties.Targets) != 1 || !slices.Equal(r.Properties.Targets[0].Arn["Fn::GetAtt"], []string{"InterruptionQueue", "Arn"}) {
			t.Errorf("rule %s targets %+v, want the InterruptionQueue", name, r.Properties.Targets)
		}
	}
	want := []string{sourceEC2 + " / " + spotInterruptionWarning, sourceEC2 + " / " + rebalanceRecommendation,
		sourceEC2 + " / " + stateChangeNotification, sourceHealth + " / " + healthEvent, sourceEC2 + " / " + reservationInterruption}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("the template's rules send %q, the parser reads %q", got, want)
	}
}
