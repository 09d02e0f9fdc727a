package lint

import (
	"encoding/json"
	"errors"
	"fmt"
	resourceapi "k8s.io/api/resource/v1"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// Linter runs the rules. It holds the CRD validators and the instance-type
// catalog, both built once.
type Linter struct {
	v     *manifest.Validator
	types *catalogTypes
}

// New builds a Linter from the embedded CRDs and instance-type catalog.
func New() (*Linter, error) {
	v, err := manifest.NewValidator()
	if err != nil {
		return nil, err
	}
	types, err := loadCatalogTypes()
	if err != nil {
		return nil, err
	}
	return &Linter{v: v, types: types}, nil
}

// object is one document as the rules see it.
type object struct {
	doc     *manifest.Document
	ignores []string
	pool    *v1.NodePool          // set for a NodePool that decoded
	overlay *v1alpha1.NodeOverlay // set for a NodeOverlay that decoded
	buffer  *autoscalingv1beta1.CapacityBuffer
	class   *awsv1.EC2NodeClass // set for an EC2NodeClass that decoded
	// target is a PodTemplate's, a Deployment's or a StatefulSet's pod
	// template, for the CapacityBuffers that name it.
	target *buffer.Target
	pdb    *policyv1.PodDisruptionBudget
	// deviceClass and deviceClaim: a DeviceClass, and a claim template's
	// or unallocated claim's spec, for JNR019.
	deviceClass *resourceapi.DeviceClass
	deviceClaim *deviceClaim
	// replicas and labels of a Deployment or StatefulSet, for PDBs.
	workload *workload
}

type workload struct {
	namespace string
	labels    map[string]string
	replicas  int32
}

// set is the manifests that are applied together: cross-object rules
// (references, equal weights, PDBs, duplicates) look only within one.
type set struct {
	name    string
	objects []*object
}

// Lint checks the files and directories in paths. Files named directly
// form one set together; a directory is a set of its own, split again at
// every directory below it that holds a scenario.yaml or
// kustomization.yaml (one cluster's manifests). An error means the run
// could not be made (a path that does not exist).
func (l *Linter) Lint(paths []string, cfg *Config) (*Result, error) {
	res := &Result{}
	fileOrder := map[string]int{}
	sets := map[string]*set{}
	var setOrder []string
	var findings []Finding
	for _, arg := range paths {
		files, err := manifest.ManifestFiles(arg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (fix: name the files or directories that hold your NodePools)", arg, err)
		}
		st, _ := os.Stat(arg)
		karpenter, unparsed := 0, false
		for _, f := range files {
			if _, seen := fileOrder[f]; seen {
				continue
			}
			fileOrder[f] = len(fileOrder)
			res.Files++
			docs, err := manifest.ParseFile(f)
			var ps manifest.Problems
			if errors.As(err, &ps) {
				for _, p := range ps {
					findings = append(findings, fromProblem(nil, p))
				}
				unparsed = true
				continue
			} else if err != nil {
				return nil, err
			}
			name := "the files named"
			if st.IsDir() {
				name = setOf(arg, f)
			}
			s := sets[name]
			if s == nil {
				s = &set{name: name}
				sets[name] = s
				setOrder = append(setOrder, name)
			}
			for _, d := range docs {
				o, fs := l.object(d)
				if o == nil {
					continue
				}
				res.Objects++
				if manifest.IsKarpenter(d) {
					karpenter++
				}
				s.objects = append(s.objects, o)
				findings = append(findings, fs...)
			}
		}
		// A CI job pointed at the wrong directory must not pass.
		if karpenter == 0 && !unparsed {
			return nil, fmt.Errorf("%s: no NodePool, EC2NodeClass or older Karpenter object in %s (fix: name the files or directories that hold your NodePools)", arg, plural(len(files), "file"))
		}
	}
	for _, name := range setOrder {
		findings = append(findings, l.setFindings(sets[name])...)
	}
	ignores := map[*manifest.Document][]string{}
	for _, s := range sets {
		for _, o := range s.objects {
			ignores[o.doc] = o.ignores
		}
	}
	findings = dropCovered(findings)
	for _, f := range findings {
		if cfg.apply(&f, ignores[f.doc]) {
			res.Silenced++
			continue
		}
		res.Findings = append(res.Findings, f)
	}
	sortFindings(res.Findings, fileOrder)
	return res, nil
}

// setOf is the set a file found below the directory arg belongs to.
func setOf(arg, file string) string {
	root := filepath.Clean(arg)
	for d := filepath.Dir(file); strings.HasPrefix(d, root); d = filepath.Dir(d) {
		for _, marker := range []string{"scenario.yaml", "kustomization.yaml"} {
			if _, err := os.Stat(filepath.Join(d, marker)); err == nil {
				return d
			}
		}
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	return root
}

// object validates one document and runs the rules that need only it.
// Documents of kinds Joiner does not read are skipped (nil).
func (l *Linter) object(d *manifest.Document) (*object, []Finding) {
	o := &object{doc: d, ignores: annotatedIgnores(d.Object)}
	var fs []Finding
	switch {
	case manifest.IsKarpenter(d):
		fs = l.karpenterObject(o, d)
	case manifest.IsBuiltin(d):
		fs = builtinObject(o, d)
	default:
		return nil, nil
	}
	return o, fs
}

// karpenterObject validates a document of Karpenter's (or Joiner's) API
// groups and keeps, on o, the objects the rules read: a valid NodeOverlay
// or CapacityBuffer, an EC2NodeClass, and a NodePool as the API server
// would store it (migrated and defaulted even when something else is
// wrong, so every finding shows at once) with its own findings.
func (l *Linter) karpenterObject(o *object, d *manifest.Document) []Finding {
	var fs []Finding
	problems := l.v.Validate(d)
	for _, p := range problems {
		fs = append(fs, fromProblem(d, p))
	}
	if d.Kind == "NodeOverlay" && d.APIVersion == v1alpha1.SchemeGroupVersion.String() && len(problems.Errors()) == 0 {
		var ov v1alpha1.NodeOverlay
		if b, err := json.Marshal(d.Object); err == nil && json.Unmarshal(b, &ov) == nil {
			o.overlay = &ov
		}
	}
	if d.Kind == "CapacityBuffer" && d.APIVersion == autoscalingv1beta1.SchemeGroupVersion.String() && len(problems.Errors()) == 0 {
		var cb autoscalingv1beta1.CapacityBuffer
		if b, err := json.Marshal(d.Object); err == nil && json.Unmarshal(b, &cb) == nil {
			cb.Namespace = podutil.Namespace(cb.ObjectMeta)
			o.buffer = &cb
		}
	}
	if d.Kind == "EC2NodeClass" && d.APIVersion == awsv1.SchemeGroupVersion.String() {
		var nc awsv1.EC2NodeClass
		if b, err := json.Marshal(d.Object); err == nil && json.Unmarshal(b, &nc) == nil {
			o.class = &nc
		}
	}
	if d.Kind == "NodePool" && d.APIVersion == v1.SchemeGroupVersion.String() {
		var np v1.NodePool
		if b, err := json.Marshal(d.Object); err == nil && json.Unmarshal(b, &np) == nil {
			o.pool = &np
			fs = append(fs, l.poolFindings(d, &np)...)
		}
	}
	return fs
}

// builtinObject decodes a Kubernetes built-in document and keeps, on o,
// what the rules read of it: a PDB, a Deployment's or StatefulSet's pods,
// device classes and claims, a CapacityBuffer's target.
func builtinObject(o *object, d *manifest.Document) []Finding {
	var fs []Finding
	obj, ps := manifest.DecodeBuiltin(d)
	for _, p := range ps {
		fs = append(fs, fromProblem(d, p))
	}
	switch t := obj.(type) {
	case *policyv1.PodDisruptionBudget:
		o.pdb = t
	case *appsv1.Deployment:
		o.workload = &workload{t.Namespace, t.Spec.Template.Labels, replicasOr1(t.Spec.Replicas)}
	case *appsv1.StatefulSet:
		o.workload = &workload{t.Namespace, t.Spec.Template.Labels, replicasOr1(t.Spec.Replicas)}
	case *resourceapi.DeviceClass:
		o.deviceClass = t
	case *resourceapi.ResourceClaimTemplate:
		o.deviceClaim = &deviceClaim{"ResourceClaimTemplate", t.Namespace, t.Name, *t.Spec.Spec.DeepCopy()}
		provisioning.DefaultDeviceClaim(&o.deviceClaim.spec)
	case *resourceapi.ResourceClaim:
		if t.Status.Allocation == nil {
			o.deviceClaim = &deviceClaim{"ResourceClaim", t.Namespace, t.Name, *t.Spec.DeepCopy()}
			provisioning.DefaultDeviceClaim(&o.deviceClaim.spec)
		}
	}
	o.target, _ = buffer.TargetOf(obj)
	return fs
}

func replicasOr1(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// fromProblem turns pkg/manifest's answer into a finding: deprecated input
// is JNR002, everything else the API server would reject JNR001, and what
// upstream accepts but Joiner does not model a note.
func fromProblem(d *manifest.Document, p manifest.Problem) Finding {
	f := Finding{Rule: RuleInvalid, Severity: Error, File: p.File, Line: p.Line, Column: 1,
		Kind: p.Kind, Name: p.Name, Field: p.Field, Message: p.Message, Fix: p.Fix, Replacement: p.Replacement, doc: d, schemaRule: p.Rule}
	if p.Deprecated {
		f.Rule, f.Fixable = RuleDeprecated, true
	}
	if p.Warning {
		f.Severity = Note
	}
	if d != nil && p.Field != "" {
		if line, col := d.PositionOf(p.Field); line == p.Line {
			f.Column = col
		}
	} else if d != nil && p.Line == d.Line {
		_, f.Column = d.PositionOf("")
	}
	if f.Line == 0 {
		f.Line = 1
	}
	return f
}

// finding is a rule's finding at a field of d.
func finding(d *manifest.Document, rule, field, msg, fix string) Finding {
	r, _ := RuleByID(rule)
	line, col := d.PositionOf(field)
	return Finding{Rule: rule, Severity: r.Severity, File: d.File, Line: line, Column: col,
		Kind: d.Kind, Name: d.Name, Field: field, Message: msg, Fix: fix, doc: d}
}

// dropCovered removes the schema's finding where a rule says the same
// thing with its fix: the CRD's CEL rule for a schedule without duration.
func dropCovered(fs []Finding) []Finding {
	type at struct{ file, name string }
	noDuration := map[at]bool{}
	for _, f := range fs {
		if f.Rule == RuleScheduleNoDuration {
			noDuration[at{f.File, f.Name}] = true
		}
	}
	out := fs[:0]
	for _, f := range fs {
		if f.Rule == RuleInvalid && noDuration[at{f.File, f.Name}] && f.schemaRule == manifest.RuleBudgetScheduleWithoutDuration {
			continue
		}
		out = append(out, f)
	}
	return out
}
