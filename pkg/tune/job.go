package tune

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Line is what one pod of a tuning Job prints: its variant over every
// seed, and the search it belongs to.
type Line struct {
	Header  Header        `json:"header"`
	Variant VariantResult `json:"variant"`
	// PerSeed are the variant's metrics for the scenario's seed and the
	// next ones.
	PerSeed []Metrics `json:"perSeed"`
}

// jobHeader is the header of a search a Job runs: every variant of the
// list over the whole duration (a sampled space is not thinned by halving,
// which would need the pods to wait for each other).
func (p *Plan) jobHeader(o Options) (Header, []Variant) {
	o = p.resolved(o)
	vs, sampled := p.Variants(o)
	info := SearchInfo{Mode: "exhaustive", SpaceSize: p.Size(), Seeds: o.Seeds,
		Rungs: []Rung{{Horizon: horizon(p.In.Scenario.Spec.Duration.Duration), Variants: len(vs) - 1}}}
	if sampled {
		info.Mode, info.Sampler, info.SampleSeed, info.Samples = "job", o.Sampler, *o.SampleSeed, len(vs)-1
	}
	return p.header(info), vs
}

// Completions is how many pods a Job of this search has: one per variant,
// the baseline's included.
func (p *Plan) Completions(o Options) int {
	_, vs := p.jobHeader(o)
	return len(vs)
}

// RunIndex runs the variant of a Job's completion index over every seed.
func (p *Plan) RunIndex(ctx context.Context, o Options, index int) (Line, error) {
	o = p.resolved(o)
	h, vs := p.jobHeader(o)
	if index < 0 || index >= len(vs) {
		return Line{}, fmt.Errorf("variant index %d: the search has variants 0 to %d", index, len(vs)-1)
	}
	v := vs[index]
	runs := make([]run, o.Seeds)
	for s := range runs {
		runs[s] = run{v: v, seed: int64(s)}
	}
	done := 0
	if err := p.runAll(ctx, runs, o, &done, len(runs)); err != nil {
		return Line{}, err
	}
	l := Line{Header: h, Variant: p.result(v, runs[0].m, runs[0].err)}
	for _, r := range runs {
		if r.err != nil {
			break
		}
		l.PerSeed = append(l.PerSeed, r.m)
	}
	return l, nil
}

// SearchAsJob is what a Job's pods and Gather give, run here: every
// variant over every seed. Tests compare it with Gather's result.
func (p *Plan) SearchAsJob(ctx context.Context, o Options) (*Result, error) {
	o = p.resolved(o)
	h, vs := p.jobHeader(o)
	var lines []Line
	for i := range vs {
		l, err := p.RunIndex(ctx, o, i)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return assemble(h, nil), nil
	}
	return FromLines(lines)
}

// Gather reads JSON lines of a Job's pods (other lines, such as a log's,
// are skipped) and merges them into the result a local search gives.
func Gather(readers ...io.Reader) (*Result, error) {
	var lines []Line
	for _, r := range readers {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			t := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(t, `{"header":`) {
				continue
			}
			var l Line
			if err := json.Unmarshal([]byte(t), &l); err != nil {
				return nil, fmt.Errorf("reading a result line: %w", err)
			}
			lines = append(lines, l)
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("no result lines: give the logs of the Job's pods (kubectl logs -l job-name=NAME --tail=-1)")
	}
	return FromLines(lines)
}

// FromLines merges result lines of one search.
func FromLines(lines []Line) (*Result, error) {
	h := lines[0].Header
	byIndex := map[int]Line{}
	for _, l := range lines {
		if !reflect.DeepEqual(l.Header, h) {
			return nil, fmt.Errorf("variant %d's line is of another search (%s/%s) than variant %d's (%s/%s): gather one Job's lines",
				l.Variant.Index, l.Header.Scenario, l.Header.Space, lines[0].Variant.Index, h.Scenario, h.Space)
		}
		byIndex[l.Variant.Index] = l // a pod retried prints its variant again: the same line
	}
	want := h.Search.Rungs[len(h.Search.Rungs)-1].Variants + 1
	var missing []string
	for i := range want {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no line for variants %s of %d: gather every completed pod's log", strings.Join(missing, ", "), want)
	}
	idx := make([]int, 0, len(byIndex))
	for i := range byIndex {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	results := make([]VariantResult, len(idx))
	for k, i := range idx {
		results[k] = byIndex[i].Variant
	}
	res := assemble(h, results)
	perSeed := map[int][]Metrics{}
	for _, f := range res.finalists() {
		perSeed[res.Variants[f].Index] = byIndex[res.Variants[f].Index].PerSeed
	}
	res.robustness(perSeed, h.Search.Seeds)
	return res, nil
}

// JobSpec says how to run a search as an Indexed Job.
type JobSpec struct {
	Name, Namespace, Image string
	Parallelism            int
	// Args are the pod command's flags beside the scenario, space and
	// variant index (--seeds, --decisions, …).
	Args []string
}

// The paths the Job's pods read the scenario and the space from.
const (
	jobScenarioDir = "/tune/scenario"
	jobSpacePath   = "/tune/space.yaml"
)

// JobObjects are a ConfigMap holding the scenario's YAML files (below dir
// in fsys) and the space, and an Indexed Job that runs one variant per
// completion index, its result as a JSON line on stdout.
func (p *Plan) JobObjects(o Options, js JobSpec, space []byte) (*corev1.ConfigMap, *batchv1.Job, error) {
	files, err := manifest.YAMLFiles(p.FS, p.Dir)
	if err != nil {
		return nil, nil, err
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: js.Name + "-input", Namespace: js.Namespace}, Data: map[string]string{"space.yaml": string(space)}}
	items := []corev1.KeyToPath{{Key: "space.yaml", Path: path.Base(jobSpacePath)}}
	size := len(space)
	for i, f := range files {
		b, err := fs.ReadFile(p.FS, f)
		if err != nil {
			return nil, nil, err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(f, p.Dir), "/")
		if p.Dir == "." {
			rel = f
		}
		key := fmt.Sprintf("scenario-%03d.yaml", i)
		cm.Data[key] = string(b)
		items = append(items, corev1.KeyToPath{Key: key, Path: "scenario/" + rel})
		size += len(b)
	}
	if size > 1000*1000 {
		return nil, nil, fmt.Errorf("the scenario and space are %d bytes, more than a ConfigMap holds (1 MiB): build an image with them in, or mount a volume at %s", size, jobScenarioDir)
	}
	n := int32(p.Completions(o))
	par := int32(js.Parallelism)
	if par <= 0 || par > n {
		par = n
	}
	cmd := append([]string{"/joiner", "tune", jobScenarioDir, "--space", jobSpacePath, "--variant-index", "$(JOB_COMPLETION_INDEX)"}, js.Args...)
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: js.Name, Namespace: js.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "joiner-tune"}},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Completions: &n, Parallelism: &par,
			BackoffLimitPerIndex: ptr.To(int32(1)), MaxFailedIndexes: ptr.To(n),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "joiner-tune"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "tune", Image: js.Image, Command: cmd,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: mustQuantity("1"), corev1.ResourceMemory: mustQuantity("512Mi")}},
						VolumeMounts:    []corev1.VolumeMount{{Name: "input", MountPath: "/tune", ReadOnly: true}},
						SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true)},
					}},
					Volumes: []corev1.Volume{{Name: "input", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Items: items}}}},
				},
			},
		},
	}
	return cm, job, nil
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
