package lint

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// reservedFindings: a NodePool that may launch only into capacity
// reservations — capacity-type reserved alone, or a reservation ID
// required — needs its EC2NodeClass to select some
// (capacityReservationSelectorTerms); without them upstream offers its
// types no reserved offering, and the pool launches nothing (JNR018). A
// node class not in the set is JNR012's.
func reservedFindings(s *set) []Finding {
	classes := map[string]*object{}
	for _, o := range s.objects {
		if o.class != nil {
			classes[o.class.Name] = o
		}
	}
	var fs []Finding
	for _, o := range s.objects {
		np := o.pool
		if np == nil || np.Spec.Template.Spec.NodeClassRef == nil {
			continue
		}
		class := classes[np.Spec.Template.Spec.NodeClassRef.Name]
		if class == nil || len(class.class.Spec.CapacityReservationSelectorTerms) > 0 {
			continue
		}
		reqs := scheduling.FromNodePool(np)
		ct := reqs.Get(v1.LabelCapacityType)
		onlyReserved := ct.Has(v1.CapacityTypeReserved) && !ct.Has(v1.CapacityTypeOnDemand) && !ct.Has(v1.CapacityTypeSpot)
		op := reqs.Get(cloudprovider.ReservationIDLabel).Operator()
		needsID := reqs.Has(cloudprovider.ReservationIDLabel) && (op == corev1.NodeSelectorOpIn || op == corev1.NodeSelectorOpExists)
		if !onlyReserved && !needsID {
			continue
		}
		what := "karpenter.sh/capacity-type allows only reserved"
		if !onlyReserved {
			what = cloudprovider.ReservationIDLabel + " is required"
		}
		fs = append(fs, finding(o.doc, RuleReservedWithoutTerms, "spec.template.spec.requirements",
			fmt.Sprintf("%s, but EC2NodeClass %s (%s:%d) selects no capacity reservation: the NodePool has no offering to launch and its pods stay pending", what, class.class.Name, class.doc.File, class.doc.Line),
			"add capacityReservationSelectorTerms to the EC2NodeClass (by id, or by tags), or allow on-demand as the fallback"))
	}
	return fs
}
