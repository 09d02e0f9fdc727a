package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
)

func TestPlanSaysItCannotSeeReservations(t *testing.T) {
	dir := t.TempDir()
	class := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: reserved}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: reserved}
spec:
  role: r
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
  capacityReservationSelectorTerms: [{id: cr-0123}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: plain}
spec:
  role: r
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
`
	if err := os.WriteFile(filepath.Join(dir, "classes.yaml"), []byte(class), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	notes := objs.ReservationNotes()
	if len(notes) != 1 || !strings.Contains(notes[0], "EC2NodeClass reserved selects capacity reservations") {
		t.Fatalf("notes %q: want one, for the class that selects reservations", notes)
	}
	// A live cluster's class, resolved by upstream's controller, lists
	// what it found.
	for _, nc := range objs.NodeClasses {
		if nc.Name == "reserved" {
			nc.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-0123"}, {ID: "cr-0456"}}
		}
	}
	if notes := objs.ReservationNotes(); !strings.Contains(notes[0], "its status lists cr-0123, cr-0456") {
		t.Errorf("note %q does not name the reservations the status lists", notes[0])
	}
}
