package v1

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// KubeletConfiguration is spec.kubelet: any field of the kubelet's own
// KubeletConfiguration (k8s.io/kubelet/config/v1beta1 v0.36, the version the
// newest upstream provider is built against), as upstream accepts since it
// opened the field (v1.14). Upstream's CRD takes any object and checks names,
// types and the rules below in its controller, where a bad value shows as
// ValidationSucceeded=False and blocks launches; Joiner checks them where a
// manifest is validated. The fields Karpenter reads for scheduling come
// first, typed and constrained; the others are typed as the kubelet types
// them, except nested objects, which are accepted unchecked.
// +kubebuilder:validation:XValidation:message="imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",rule="has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true"
// +kubebuilder:validation:XValidation:message="evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",rule="has(self.evictionSoft) ? self.evictionSoft.all(e, has(self.evictionSoftGracePeriod) && (e in self.evictionSoftGracePeriod)) : true"
// +kubebuilder:validation:XValidation:message="evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",rule="has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, has(self.evictionSoft) && (e in self.evictionSoft)) : true"
// +kubebuilder:validation:XValidation:message="registerWithTaints can't be set, Karpenter sets it from the NodeClaim's taints so the node registers unschedulable until it's ready",rule="!has(self.registerWithTaints)"
type KubeletConfiguration struct {
	// ClusterDNS is the list of cluster DNS server addresses.
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods is the most pods a node runs: an integer, or a CEL expression
	// evaluated per instance type (vcpus, memory_mib, default_enis,
	// ips_per_eni, max_pods, instance_type).
	// +kubebuilder:validation:XValidation:message="maxPods must be a non-negative integer when set to an integer",rule="type(self) != int || self >= 0"
	// +optional
	MaxPods *intstr.IntOrString `json:"maxPods,omitempty"`
	// PodsPerCore caps pods per vCPU; the lower of this and maxPods wins.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved is capacity held back for the OS: a quantity, or a CEL
	// expression evaluated per instance type.
	// +kubebuilder:validation:XValidation:message="valid keys for systemReserved are ['cpu','memory','ephemeral-storage','pid']",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="systemReserved value cannot be a negative resource quantity",rule="self.all(x, !self[x].startsWith('-'))"
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved is capacity held back for Kubernetes daemons: a quantity,
	// or a CEL expression evaluated per instance type.
	// +kubebuilder:validation:XValidation:message="valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="kubeReserved value cannot be a negative resource quantity",rule="self.all(x, !self[x].startsWith('-'))"
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard thresholds, by eviction signal.
	// +kubebuilder:validation:XValidation:message="valid keys for evictionHard are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionHard map[string]EvictionThreshold `json:"evictionHard,omitempty"`
	// EvictionSoft thresholds, by eviction signal; each needs a grace period.
	// +kubebuilder:validation:XValidation:message="valid keys for evictionSoft are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionSoft map[string]EvictionThreshold `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod, by eviction signal: how long a soft threshold
	// must hold before pods are evicted.
	// +kubebuilder:validation:XValidation:message="valid keys for evictionSoftGracePeriod are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionSoftGracePeriod map[string]EvictionGracePeriod `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the longest grace period, in seconds, a
	// pod gets when a soft threshold evicts it.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// EvictionMinimumReclaim, by eviction signal: how much more than the
	// threshold an eviction frees.
	// +kubebuilder:validation:XValidation:message="valid keys for evictionMinimumReclaim are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionMinimumReclaim map[string]EvictionThreshold `json:"evictionMinimumReclaim,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage above which image garbage
	// collection always runs.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage below which image garbage
	// collection never runs.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enforces CPU limits with CFS quota.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
	// RegisterWithTaints is Karpenter's to set (from the NodeClaim's taints);
	// it is declared only so that setting it is answered with that.
	// +optional
	RegisterWithTaints []corev1.Taint `json:"registerWithTaints,omitempty"`

	// The rest of the kubelet's KubeletConfiguration, passed to the node
	// unchanged. APIVersion and Kind are the kubelet type's own type meta.

	// +optional
	APIVersion *string `json:"apiVersion,omitempty"`
	// +optional
	Kind *string `json:"kind,omitempty"`
	// +optional
	EnableServer *bool `json:"enableServer,omitempty"`
	// +optional
	StaticPodPath *string `json:"staticPodPath,omitempty"`
	// +optional
	PodLogsDir *string `json:"podLogsDir,omitempty"`
	// +optional
	SyncFrequency *KubeletDuration `json:"syncFrequency,omitempty"`
	// +optional
	FileCheckFrequency *KubeletDuration `json:"fileCheckFrequency,omitempty"`
	// +optional
	HTTPCheckFrequency *KubeletDuration `json:"httpCheckFrequency,omitempty"`
	// +optional
	StaticPodURL *string `json:"staticPodURL,omitempty"`
	// +optional
	StaticPodURLHeader map[string][]string `json:"staticPodURLHeader,omitempty"`
	// +optional
	Address *string `json:"address,omitempty"`
	// +optional
	Port *int32 `json:"port,omitempty"`
	// +optional
	ReadOnlyPort *int32 `json:"readOnlyPort,omitempty"`
	// +optional
	TLSCertFile *string `json:"tlsCertFile,omitempty"`
	// +optional
	TLSPrivateKeyFile *string `json:"tlsPrivateKeyFile,omitempty"`
	// +optional
	TLSCipherSuites []string `json:"tlsCipherSuites,omitempty"`
	// +optional
	TLSCurvePreferences []int32 `json:"tlsCurvePreferences,omitempty"`
	// +optional
	TLSMinVersion *string `json:"tlsMinVersion,omitempty"`
	// +optional
	RotateCertificates *bool `json:"rotateCertificates,omitempty"`
	// +optional
	ServerTLSBootstrap *bool `json:"serverTLSBootstrap,omitempty"`
	// +optional
	Authentication *apiextensionsv1.JSON `json:"authentication,omitempty"`
	// +optional
	Authorization *apiextensionsv1.JSON `json:"authorization,omitempty"`
	// +optional
	RegistryPullQPS *int32 `json:"registryPullQPS,omitempty"`
	// +optional
	RegistryBurst *int32 `json:"registryBurst,omitempty"`
	// +optional
	ImagePullCredentialsVerificationPolicy *string `json:"imagePullCredentialsVerificationPolicy,omitempty"`
	// +optional
	PreloadedImagesVerificationAllowlist []string `json:"preloadedImagesVerificationAllowlist,omitempty"`
	// +optional
	EventRecordQPS *int32 `json:"eventRecordQPS,omitempty"`
	// +optional
	EventBurst *int32 `json:"eventBurst,omitempty"`
	// +optional
	EnableDebuggingHandlers *bool `json:"enableDebuggingHandlers,omitempty"`
	// +optional
	EnableContentionProfiling *bool `json:"enableContentionProfiling,omitempty"`
	// +optional
	HealthzPort *int32 `json:"healthzPort,omitempty"`
	// +optional
	HealthzBindAddress *string `json:"healthzBindAddress,omitempty"`
	// +optional
	OOMScoreAdj *int32 `json:"oomScoreAdj,omitempty"`
	// +optional
	ClusterDomain *string `json:"clusterDomain,omitempty"`
	// +optional
	StreamingConnectionIdleTimeout *KubeletDuration `json:"streamingConnectionIdleTimeout,omitempty"`
	// +optional
	NodeStatusUpdateFrequency *KubeletDuration `json:"nodeStatusUpdateFrequency,omitempty"`
	// +optional
	NodeStatusReportFrequency *KubeletDuration `json:"nodeStatusReportFrequency,omitempty"`
	// +optional
	NodeLeaseDurationSeconds *int32 `json:"nodeLeaseDurationSeconds,omitempty"`
	// +optional
	ImageMinimumGCAge *KubeletDuration `json:"imageMinimumGCAge,omitempty"`
	// +optional
	ImageMaximumGCAge *KubeletDuration `json:"imageMaximumGCAge,omitempty"`
	// +optional
	VolumeStatsAggPeriod *KubeletDuration `json:"volumeStatsAggPeriod,omitempty"`
	// +optional
	KubeletCgroups *string `json:"kubeletCgroups,omitempty"`
	// +optional
	SystemCgroups *string `json:"systemCgroups,omitempty"`
	// +optional
	CgroupRoot *string `json:"cgroupRoot,omitempty"`
	// +optional
	CgroupsPerQOS *bool `json:"cgroupsPerQOS,omitempty"`
	// +optional
	CgroupDriver *string `json:"cgroupDriver,omitempty"`
	// +optional
	CPUManagerPolicy *string `json:"cpuManagerPolicy,omitempty"`
	// +optional
	SingleProcessOOMKill *bool `json:"singleProcessOOMKill,omitempty"`
	// +optional
	CPUManagerPolicyOptions map[string]string `json:"cpuManagerPolicyOptions,omitempty"`
	// +optional
	CPUManagerReconcilePeriod *KubeletDuration `json:"cpuManagerReconcilePeriod,omitempty"`
	// +optional
	MemoryManagerPolicy *string `json:"memoryManagerPolicy,omitempty"`
	// +optional
	TopologyManagerPolicy *string `json:"topologyManagerPolicy,omitempty"`
	// +optional
	TopologyManagerScope *string `json:"topologyManagerScope,omitempty"`
	// +optional
	TopologyManagerPolicyOptions map[string]string `json:"topologyManagerPolicyOptions,omitempty"`
	// +optional
	QOSReserved map[string]string `json:"qosReserved,omitempty"`
	// +optional
	RuntimeRequestTimeout *KubeletDuration `json:"runtimeRequestTimeout,omitempty"`
	// +optional
	HairpinMode *string `json:"hairpinMode,omitempty"`
	// +optional
	PodCIDR *string `json:"podCIDR,omitempty"`
	// +optional
	PodPidsLimit *int64 `json:"podPidsLimit,omitempty"`
	// +optional
	ResolverConfig *string `json:"resolvConf,omitempty"`
	// +optional
	RunOnce *bool `json:"runOnce,omitempty"`
	// +optional
	CPUCFSQuotaPeriod *KubeletDuration `json:"cpuCFSQuotaPeriod,omitempty"`
	// +optional
	NodeStatusMaxImages *int32 `json:"nodeStatusMaxImages,omitempty"`
	// +optional
	MaxOpenFiles *int64 `json:"maxOpenFiles,omitempty"`
	// +optional
	ContentType *string `json:"contentType,omitempty"`
	// +optional
	KubeAPIQPS *int32 `json:"kubeAPIQPS,omitempty"`
	// +optional
	KubeAPIBurst *int32 `json:"kubeAPIBurst,omitempty"`
	// +optional
	SerializeImagePulls *bool `json:"serializeImagePulls,omitempty"`
	// +optional
	MaxParallelImagePulls *int32 `json:"maxParallelImagePulls,omitempty"`
	// +optional
	EvictionPressureTransitionPeriod *KubeletDuration `json:"evictionPressureTransitionPeriod,omitempty"`
	// +optional
	MergeDefaultEvictionSettings *bool `json:"mergeDefaultEvictionSettings,omitempty"`
	// +optional
	EnableControllerAttachDetach *bool `json:"enableControllerAttachDetach,omitempty"`
	// +optional
	ProtectKernelDefaults *bool `json:"protectKernelDefaults,omitempty"`
	// +optional
	MakeIPTablesUtilChains *bool `json:"makeIPTablesUtilChains,omitempty"`
	// +optional
	IPTablesMasqueradeBit *int32 `json:"iptablesMasqueradeBit,omitempty"`
	// +optional
	IPTablesDropBit *int32 `json:"iptablesDropBit,omitempty"`
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// +optional
	FailSwapOn *bool `json:"failSwapOn,omitempty"`
	// +optional
	MemorySwap *apiextensionsv1.JSON `json:"memorySwap,omitempty"`
	// +optional
	ContainerLogMaxSize *string `json:"containerLogMaxSize,omitempty"`
	// +optional
	ContainerLogMaxFiles *int32 `json:"containerLogMaxFiles,omitempty"`
	// +optional
	ContainerLogMaxWorkers *int32 `json:"containerLogMaxWorkers,omitempty"`
	// +optional
	ContainerLogMonitorInterval *KubeletDuration `json:"containerLogMonitorInterval,omitempty"`
	// +optional
	ConfigMapAndSecretChangeDetectionStrategy *string `json:"configMapAndSecretChangeDetectionStrategy,omitempty"`
	// +optional
	ReservedSystemCPUs *string `json:"reservedSystemCPUs,omitempty"`
	// +optional
	ShowHiddenMetricsForVersion *string `json:"showHiddenMetricsForVersion,omitempty"`
	// +optional
	SystemReservedCgroup *string `json:"systemReservedCgroup,omitempty"`
	// +optional
	KubeReservedCgroup *string `json:"kubeReservedCgroup,omitempty"`
	// +optional
	EnforceNodeAllocatable []string `json:"enforceNodeAllocatable,omitempty"`
	// +optional
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls,omitempty"`
	// +optional
	VolumePluginDir *string `json:"volumePluginDir,omitempty"`
	// +optional
	ProviderID *string `json:"providerID,omitempty"`
	// +optional
	KernelMemcgNotification *bool `json:"kernelMemcgNotification,omitempty"`
	// +optional
	Logging *apiextensionsv1.JSON `json:"logging,omitempty"`
	// +optional
	EnableSystemLogHandler *bool `json:"enableSystemLogHandler,omitempty"`
	// +optional
	EnableSystemLogQuery *bool `json:"enableSystemLogQuery,omitempty"`
	// +optional
	ShutdownGracePeriod *KubeletDuration `json:"shutdownGracePeriod,omitempty"`
	// +optional
	ShutdownGracePeriodCriticalPods *KubeletDuration `json:"shutdownGracePeriodCriticalPods,omitempty"`
	// +optional
	ShutdownGracePeriodByPodPriority *apiextensionsv1.JSON `json:"shutdownGracePeriodByPodPriority,omitempty"`
	// +optional
	CrashLoopBackOff *apiextensionsv1.JSON `json:"crashLoopBackOff,omitempty"`
	// +optional
	ReservedMemory *apiextensionsv1.JSON `json:"reservedMemory,omitempty"`
	// +optional
	EnableProfilingHandler *bool `json:"enableProfilingHandler,omitempty"`
	// +optional
	EnableDebugFlagsHandler *bool `json:"enableDebugFlagsHandler,omitempty"`
	// +optional
	SeccompDefault *bool `json:"seccompDefault,omitempty"`
	// +optional
	MemoryThrottlingFactor *KubeletNumber `json:"memoryThrottlingFactor,omitempty"`
	// +optional
	MemoryReservationPolicy *string `json:"memoryReservationPolicy,omitempty"`
	// +optional
	RegisterNode *bool `json:"registerNode,omitempty"`
	// +optional
	Tracing *apiextensionsv1.JSON `json:"tracing,omitempty"`
	// +optional
	LocalStorageCapacityIsolation *bool `json:"localStorageCapacityIsolation,omitempty"`
	// +optional
	ContainerRuntimeEndpoint *string `json:"containerRuntimeEndpoint,omitempty"`
	// +optional
	ImageServiceEndpoint *string `json:"imageServiceEndpoint,omitempty"`
	// +optional
	FailCgroupV1 *bool `json:"failCgroupV1,omitempty"`
	// +optional
	UserNamespaces *apiextensionsv1.JSON `json:"userNamespaces,omitempty"`
}

// EvictionThreshold is a percentage of the signal's resource ("5%", at most
// 100) or a non-negative quantity ("500Mi"), the two forms the kubelet takes.
// +kubebuilder:validation:Pattern=`^((\+?0*(100(\.0*)?|[0-9]{1,2}(\.[0-9]*)?|\.[0-9]+))%|\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$`
type EvictionThreshold string

// EvictionGracePeriod is a non-negative Go duration such as 30s or 1m30s.
// +kubebuilder:validation:Pattern=`^(\+?0|\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
type EvictionGracePeriod string

// KubeletDuration is a Go duration such as 10s, 1m30s or -1s, as the
// kubelet's metav1.Duration fields take.
// +kubebuilder:validation:Pattern=`^([-+]?0|[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
type KubeletDuration string

// KubeletNumber is a JSON number (memoryThrottlingFactor), kept as written:
// a Go float would need controller-gen's dangerous types.
// +kubebuilder:validation:Type=number
type KubeletNumber string

// UnmarshalJSON takes a JSON number.
func (n *KubeletNumber) UnmarshalJSON(b []byte) error {
	var v json.Number
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = KubeletNumber(v)
	return nil
}

// MarshalJSON writes the number as it was read.
func (n KubeletNumber) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("0"), nil
	}
	return []byte(n), nil
}
