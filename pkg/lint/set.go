package lint

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// setFindings are the rules across the objects of one set.
func (l *Linter) setFindings(s *set) []Finding {
	var fs []Finding
	var docs []*manifest.Document
	for _, o := range s.objects {
		docs = append(docs, o.doc)
	}
	for _, p := range manifest.Duplicates(docs) {
		f := fromProblem(docAt(s, p), p)
		f.Rule = RuleDuplicate
		fs = append(fs, f)
	}
	fs = append(fs, l.overlaps(s)...)
	fs = append(fs, danglingRefs(s)...)
	fs = append(fs, blockingPDBs(s)...)
	fs = append(fs, l.overlayFindings(s)...)
	fs = append(fs, bufferFindings(s)...)
	fs = append(fs, reservedFindings(s)...)
	fs = append(fs, l.deviceFindings(s)...)
	return fs
}

// overlayFindings apply the set's NodeOverlays to its NodePools' catalog
// instance types, as Joiner and Karpenter would: a conflict refuses an
// overlay (JNR014); an overlay that changes nothing is likely a mistake
// (JNR015).
func (l *Linter) overlayFindings(s *set) []Finding {
	var pools []*v1.NodePool
	var overlays []*v1alpha1.NodeOverlay
	docs := map[string]*manifest.Document{}
	for _, o := range s.objects {
		if o.pool != nil {
			pools = append(pools, o.pool)
		}
		if o.overlay != nil {
			overlays = append(overlays, o.overlay)
			docs[o.overlay.Name] = o.doc
		}
	}
	if len(overlays) == 0 || len(pools) == 0 {
		return nil
	}
	its := map[string][]*cloudprovider.InstanceType{}
	for _, np := range pools {
		for _, t := range l.types.matching(scheduling.FromNodePool(np)) {
			its[np.Name] = append(its[np.Name], t.it)
		}
	}
	var fs []Finding
	for _, st := range overlay.Apply(pools, its, overlays, overlay.HighestWeight).Statuses {
		d := docs[st.Name]
		switch {
		case st.Reason == v1alpha1.ReasonConflict:
			fs = append(fs, finding(d, RuleOverlayConflict, "spec.weight", "NodeOverlay "+st.Name+" "+st.Message+": it would be refused (ValidationSucceeded False, Conflict) and apply nowhere",
				"give one of the two another weight (the higher one's price holds), or narrow their requirements so they select different offerings"))
		case st.Valid && st.Selected == 0:
			fs = append(fs, finding(d, RuleOverlaySelectsNothing, "spec.requirements", fmt.Sprintf("NodeOverlay %s selects no instance type of the %s here", st.Name, plural(len(pools), "NodePool")),
				"check its requirements' keys and values against the NodePools': an instance-type label, karpenter.sh/nodepool, or a template label the pool sets"))
		}
	}
	return fs
}

// written reports whether the field is in the document as written, not
// only in its migrated or defaulted form.
func written(d *manifest.Document, field string) bool {
	l1, c1 := d.PositionOf(field)
	parent := field[:strings.LastIndex(field, ".")]
	l2, c2 := d.PositionOf(parent)
	return l1 != l2 || c1 != c2
}

// docAt is the document of the set a problem names (by file and document).
func docAt(s *set, p manifest.Problem) *manifest.Document {
	for _, o := range s.objects {
		if o.doc.File == p.File && o.doc.Doc == p.Doc && o.doc.Name == p.Name {
			return o.doc
		}
	}
	return nil
}

// overlaps: two pools of equal weight that the same pods can use — a type
// both allow, and the same NoSchedule/NoExecute taints — are chosen
// between at random.
func (l *Linter) overlaps(s *set) []Finding {
	var fs []Finding
	var pools []*object
	for _, o := range s.objects {
		if o.pool != nil {
			pools = append(pools, o)
		}
	}
	for j, b := range pools {
		for _, a := range pools[:j] {
			if a.doc.Name == b.doc.Name || weightOf(a.pool) != weightOf(b.pool) || taintKey(a.pool.Spec.Template.Spec.Taints) != taintKey(b.pool.Spec.Template.Spec.Taints) {
				continue
			}
			ra, rb := scheduling.FromNodePool(a.pool), scheduling.FromNodePool(b.pool)
			if ra.Intersects(rb) != nil {
				continue
			}
			both := ra.Copy()
			both.Merge(rb)
			types := l.types.matching(both)
			if len(types) == 0 {
				continue
			}
			fs = append(fs, finding(b.doc, RuleEqualWeightOverlap, "spec.weight",
				fmt.Sprintf("NodePool %q (%s:%d) has the same weight (%d) and taints, and both can launch %s: a pod that fits both goes to either, unpredictably",
					a.doc.Name, a.doc.File, a.doc.Line, weightOf(b.pool), sample(types)),
				"give the preferred pool a higher spec.weight, or separate them with requirements or a taint"))
			break
		}
	}
	return fs
}

// taintKey identifies the taints that keep pods off (NoSchedule, NoExecute).
func taintKey(ts []corev1.Taint) string {
	var keys []string
	for _, t := range ts {
		if t.Effect != corev1.TaintEffectPreferNoSchedule {
			keys = append(keys, t.Key+"="+t.Value+":"+string(t.Effect))
		}
	}
	sortStrings(keys)
	return strings.Join(keys, ",")
}

// danglingRefs: a pool whose NodeClass is not among the set's objects.
func danglingRefs(s *set) []Finding {
	have := map[string]bool{}
	var names []string
	for _, o := range s.objects {
		if strings.HasSuffix(o.doc.Kind, "NodeClass") {
			have[o.doc.Kind+"/"+o.doc.Name] = true
			names = append(names, o.doc.Kind+" "+o.doc.Name)
		}
	}
	var fs []Finding
	for _, o := range s.objects {
		if o.pool == nil {
			continue
		}
		ref := o.pool.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Name == "" || have[ref.Kind+"/"+ref.Name] || !written(o.doc, "spec.template.spec.nodeClassRef") {
			continue // a ref the migration had to invent is JNR002's
		}
		fix := "add the " + ref.Kind + " manifest beside this NodePool"
		if len(names) > 0 {
			fix += ", or name one that is: " + strings.Join(names, ", ")
		}
		fs = append(fs, finding(o.doc, RuleDanglingNodeClassRef, "spec.template.spec.nodeClassRef.name",
			fmt.Sprintf("%s %q is not in these manifests (%s): a NodePool whose node class does not exist launches nothing", ref.Kind, ref.Name, s.name), fix))
	}
	return fs
}

// blockingPDBs: pools without terminationGracePeriod in a set with a PDB
// that allows no eviction — a drain of a node running its pods never ends.
func blockingPDBs(s *set) []Finding {
	var blocking []string
	for _, o := range s.objects {
		if o.pdb == nil {
			continue
		}
		if why := blocks(o.pdb, s.objects); why != "" {
			blocking = append(blocking, fmt.Sprintf("PodDisruptionBudget %s/%s (%s:%d) %s", o.pdb.Namespace, o.pdb.Name, o.doc.File, o.doc.Line, why))
		}
	}
	if len(blocking) == 0 {
		return nil
	}
	var fs []Finding
	for _, o := range s.objects {
		if o.pool == nil || o.pool.Spec.Template.Spec.TerminationGracePeriod != nil {
			continue
		}
		msg := "no terminationGracePeriod, and " + blocking[0]
		if len(blocking) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(blocking)-1)
		}
		fs = append(fs, finding(o.doc, RuleNoGracePeriodWithPDB, "spec.template.spec",
			msg+": a drain of a node running those pods never ends, so drift and expiry never finish",
			"set spec.template.spec.terminationGracePeriod (e.g. 48h): after it, pods are deleted whatever their PDB says"))
	}
	return fs
}

// blocks says why a PDB allows no voluntary eviction, or "".
func blocks(pdb *policyv1.PodDisruptionBudget, objects []*object) string {
	if mu := pdb.Spec.MaxUnavailable; mu != nil {
		if (mu.Type == intstr.Int && mu.IntVal == 0) || (mu.Type == intstr.String && mu.StrVal == "0%") {
			return "allows no eviction (maxUnavailable: " + mu.String() + ")"
		}
		return ""
	}
	ma := pdb.Spec.MinAvailable
	if ma == nil {
		return ""
	}
	if ma.Type == intstr.String {
		if ma.StrVal == "100%" {
			return "allows no eviction (minAvailable: 100%)"
		}
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		return ""
	}
	for _, o := range objects {
		w := o.workload
		if w != nil && w.namespace == pdb.Namespace && sel.Matches(labels.Set(w.labels)) && w.replicas <= ma.IntVal {
			return fmt.Sprintf("allows no eviction (minAvailable: %d, and %s %s has %d replicas)", ma.IntVal, o.doc.Kind, o.doc.Name, w.replicas)
		}
	}
	return ""
}

func sortStrings(s []string) { slices.Sort(s) }
