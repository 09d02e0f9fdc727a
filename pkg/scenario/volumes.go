package scenario

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// volumeRef is a claim, volume or class a document names, and the
// problem to report if the scenario lacks it.
type volumeRef struct {
	kind    string // "claim", "volume" or "class"
	key     string // namespace/name of a claim; a volume's or class's name
	class   *string
	problem manifest.Problem
}

// volumeRefsOf lists what d's object names: the claims of its pods'
// persistentVolumeClaim volumes, the classes of its claims and claim
// templates, a claim's bound volume.
func volumeRefsOf(d *manifest.Document, obj any) []volumeRef {
	var out []volumeRef
	ref := func(kind, key, field, msg, fix string) {
		out = append(out, volumeRef{kind: kind, key: key, problem: manifest.Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc,
			Kind: d.Kind, Name: d.Name, Field: field, Message: msg, Fix: fix}})
	}
	classRef := func(field string, spec *corev1.PersistentVolumeClaimSpec) {
		// A nil class is given the default one by resolveVolumes, as
		// admission would.
		out = append(out, volumeRef{kind: "class", class: spec.StorageClassName, problem: manifest.Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc,
			Kind: d.Kind, Name: d.Name, Field: field}})
	}
	pods := func(ns, at string, spec *corev1.PodSpec) {
		for i, v := range spec.Volumes {
			field := fmt.Sprintf("%s.volumes[%d]", at, i)
			switch {
			case v.PersistentVolumeClaim != nil:
				name := v.PersistentVolumeClaim.ClaimName
				ref("claim", ns+"/"+name, field+".persistentVolumeClaim.claimName",
					fmt.Sprintf("PersistentVolumeClaim %s/%s is not in the scenario", ns, name),
					fmt.Sprintf("add a v1 PersistentVolumeClaim %s in namespace %s (with a StorageClass or a PersistentVolume), or claim per replica with a StatefulSet's volumeClaimTemplates", name, ns))
			case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
				classRef(field+".ephemeral.volumeClaimTemplate.spec.storageClassName", &v.Ephemeral.VolumeClaimTemplate.Spec)
			}
		}
	}
	ns := podutil.Namespace
	switch o := obj.(type) {
	case *appsv1.Deployment:
		pods(ns(o.ObjectMeta), "spec.template.spec", &o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		pods(ns(o.ObjectMeta), "spec.template.spec", &o.Spec.Template.Spec)
		for i := range o.Spec.VolumeClaimTemplates {
			classRef(fmt.Sprintf("spec.volumeClaimTemplates[%d].spec.storageClassName", i), &o.Spec.VolumeClaimTemplates[i].Spec)
		}
	case *batchv1.Job:
		pods(ns(o.ObjectMeta), "spec.template.spec", &o.Spec.Template.Spec)
	case *batchv1.CronJob:
		pods(ns(o.ObjectMeta), "spec.jobTemplate.spec.template.spec", &o.Spec.JobTemplate.Spec.Template.Spec)
	case *corev1.Pod:
		pods(ns(o.ObjectMeta), "spec", &o.Spec)
	case *corev1.PersistentVolumeClaim:
		if o.Spec.VolumeName != "" {
			ref("volume", o.Spec.VolumeName, "spec.volumeName",
				fmt.Sprintf("PersistentVolume %s is not in the scenario", o.Spec.VolumeName),
				fmt.Sprintf("add the v1 PersistentVolume %s, or leave volumeName out so that the claim's StorageClass provisions one", o.Spec.VolumeName))
		} else {
			classRef("spec.storageClassName", &o.Spec)
		}
	}
	return out
}

// resolveVolumes gives claims and claim templates that name no
// StorageClass the default one, as the DefaultStorageClass admission
// plugin does, and checks that every claim, volume and class named is in
// the scenario.
// Its complexity is one check per kind of reference (claim, claim
// template, volume, class), each with its own problem.
func (in *Input) resolveVolumes() manifest.Problems {
	def := state.DefaultStorageClass(in.StorageClasses)
	for _, pvc := range in.PersistentVolumeClaims {
		if pvc.Spec.StorageClassName == nil && pvc.Spec.VolumeName == "" && def != "" {
			pvc.Spec.StorageClassName = &def
		}
	}
	for _, sts := range in.StatefulSets {
		for i := range sts.Spec.VolumeClaimTemplates {
			if t := &sts.Spec.VolumeClaimTemplates[i]; t.Spec.StorageClassName == nil && def != "" {
				t.Spec.StorageClassName = &def
			}
		}
	}
	claims, volumes, classes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, pvc := range in.PersistentVolumeClaims {
		claims[pvc.Namespace+"/"+pvc.Name] = true
	}
	for _, pv := range in.PersistentVolumes {
		volumes[pv.Name] = true
	}
	for _, sc := range in.StorageClasses {
		classes[sc.Name] = true
	}
	var ps manifest.Problems
	for _, r := range in.volumeRefs {
		p := r.problem
		switch r.kind {
		case "claim":
			if claims[r.key] {
				continue
			}
		case "volume":
			if volumes[r.key] {
				continue
			}
		case "class":
			switch {
			case r.class == nil && def == "":
				p.Message = "names no StorageClass, and none in the scenario is the default"
				p.Fix = `set storageClassName to a StorageClass of the scenario, or annotate one storageclass.kubernetes.io/is-default-class: "true"`
			case r.class == nil || classes[*r.class]:
				continue
			default:
				p.Message = fmt.Sprintf("StorageClass %s is not in the scenario", *r.class)
				p.Fix = fmt.Sprintf("add a storage.k8s.io/v1 StorageClass %s (volumeBindingMode: WaitForFirstConsumer, allowedTopologies for its zones), or name one the scenario has", *r.class)
			}
		}
		ps = append(ps, p)
	}
	return ps
}
