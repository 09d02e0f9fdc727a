package manifest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	sigsjson "sigs.k8s.io/json"
)

// builtinKinds are the Kubernetes kinds the simulator reads, by
// apiVersion/kind, with their Go types.
var builtinKinds = map[string]func() any{
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                    func() any { return &appsv1.StatefulSet{} },
	"apps/v1/DaemonSet":                      func() any { return &appsv1.DaemonSet{} },
	"batch/v1/Job":                           func() any { return &batchv1.Job{} },
	"batch/v1/CronJob":                       func() any { return &batchv1.CronJob{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	"scheduling.k8s.io/v1/PriorityClass":     func() any { return &schedulingv1.PriorityClass{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"v1/Pod":                                 func() any { return &corev1.Pod{} },
	"v1/PodTemplate":                         func() any { return &corev1.PodTemplate{} },
	"v1/PersistentVolumeClaim":               func() any { return &corev1.PersistentVolumeClaim{} },
	"v1/PersistentVolume":                    func() any { return &corev1.PersistentVolume{} },
	"storage.k8s.io/v1/StorageClass":         func() any { return &storagev1.StorageClass{} },
	// Dynamic Resource Allocation, read when it is modelled
	// (--ignore-dra-requests=false) and named as left out when it is not.
	"resource.k8s.io/v1/ResourceClaim":         func() any { return &resourceapi.ResourceClaim{} },
	"resource.k8s.io/v1/ResourceClaimTemplate": func() any { return &resourceapi.ResourceClaimTemplate{} },
	"resource.k8s.io/v1/DeviceClass":           func() any { return &resourceapi.DeviceClass{} },
	"resource.k8s.io/v1/ResourceSlice":         func() any { return &resourceapi.ResourceSlice{} },
}

// removedWorkloadVersions maps workload API versions Kubernetes no longer
// serves to their replacement.
var removedWorkloadVersions = map[string]string{
	"extensions/v1beta1":         "apps/v1",
	"apps/v1beta1":               "apps/v1",
	"apps/v1beta2":               "apps/v1",
	"autoscaling/v2beta1":        "autoscaling/v2",
	"autoscaling/v2beta2":        "autoscaling/v2",
	"batch/v1beta1":              "batch/v1",
	"policy/v1beta1":             "policy/v1",
	"scheduling.k8s.io/v1beta1":  "scheduling.k8s.io/v1",
	"scheduling.k8s.io/v1alpha1": "scheduling.k8s.io/v1",
}

// IsDRA reports whether d is a Dynamic Resource Allocation object of the
// version Joiner reads (resource.k8s.io/v1).
func IsDRA(d *Document) bool { return d.APIVersion == resourceapi.SchemeGroupVersion.String() }

// IsBuiltin reports whether d is one of the Kubernetes kinds the simulator
// reads, or a removed API version of a workload kind.
func IsBuiltin(d *Document) bool {
	_, ok := builtinKinds[d.APIVersion+"/"+d.Kind]
	_, old := removedWorkloadVersions[d.APIVersion]
	return ok || old
}

// DecodeBuiltin decodes d strictly into its Go type (*appsv1.Deployment, …),
// as the simulator reads it: an unknown field, a wrong type or a malformed
// value (a quantity, a duration) is a Problem naming the field, line and fix.
// It returns nil, nil for kinds it does not read.
func DecodeBuiltin(d *Document) (any, Problems) {
	if repl, ok := removedWorkloadVersions[d.APIVersion]; ok {
		return nil, Problems{d.problem("apiVersion", d.APIVersion+" is no longer served by Kubernetes: "+d.Kind+" is "+repl, "apiVersion: "+repl)}
	}
	newObj, ok := builtinKinds[d.APIVersion+"/"+d.Kind]
	if !ok {
		return nil, nil
	}
	obj := newObj()
	if ps := DecodeStrict(d, obj); len(ps) > 0 {
		return nil, ps
	}
	return obj, nil
}

// DecodeStrict decodes d into v (a pointer), reporting unknown or mistyped
// fields and malformed values with their path and line; the fix for an
// unknown field points at kubectl explain.
func DecodeStrict(d *Document, v any) Problems {
	return DecodeStrictFields(d, v, "check the spelling; kubectl explain "+strings.ToLower(d.Kind)+" lists the fields")
}

// DecodeStrictFields is DecodeStrict for kinds kubectl does not know (a
// scenario, a tuning space): fields is the fix for an unknown field, the
// fields there are. Field names match exactly, as the API server's do.
func DecodeStrictFields(d *Document, v any, fields string) Problems {
	b, err := json.Marshal(d.Object)
	if err != nil {
		return Problems{d.problem("", err.Error(), "")}
	}
	strict, err := sigsjson.UnmarshalStrict(b, v)
	if err != nil {
		return Problems{ValueProblem(d, err, func(o map[string]any) error {
			b, _ := json.Marshal(o)
			_, err := sigsjson.UnmarshalStrict(b, reflect.New(reflect.TypeOf(v).Elem()).Interface())
			return err
		})}
	}
	var ps Problems
	for _, e := range strict {
		field := ""
		var fe sigsjson.FieldError
		if errors.As(e, &fe) {
			field = fe.FieldPath()
		}
		ps = append(ps, d.problem(field, e.Error(), fields))
	}
	return ps
}
