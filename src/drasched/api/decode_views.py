"""Decode-only views: the JSON types of fields the msgspec views keep loose (``Any``) but
drasched's logic reads, and of the kinds that have no view elsewhere.

They describe shapes for :mod:`drasched.api.shapes`; nothing decodes objects into them.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from drasched.api import models, resource
from drasched.api.models import View

TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}"
Time = Annotated[str, msgspec.Meta(pattern=TIME_PATTERN)]
"""A ``metav1.Time`` (RFC 3339): decoding parses it, so a malformed time is refused there."""

INT32_MAX = 2**31 - 1
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=INT32_MAX)]
"""A Go int32 field (``format: int32`` in a CRD)."""

IntOrString = Int32 | str
"""An ``intstr.IntOrString`` (a port by number or by name): both JSON types decode; a number
must fit its ``IntVal``, an int32, as the server's decoder refuses one that does not."""

QuantityValue = str | int | float
"""A ``resource.Quantity``: a string ``resource.ParseQuantity`` accepts, or a number."""


# ---- decode-only refinements of fields the views keep as Any ---------------------------------


class LabelSelectorRequirement(View):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class LabelSelector(View):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class PreferredSchedulingTerm(View):
    weight: Int32 = 0
    preference: resource.NodeSelectorTerm = msgspec.field(default_factory=resource.NodeSelectorTerm)


class NodeAffinity(View):
    required_during_scheduling_ignored_during_execution: resource.NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(View):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(View):
    weight: Int32 = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(View):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(View):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class ContainerStateTerminated(View):
    exit_code: Int32 = 0
    signal: Int32 = 0
    reason: str = ""
    message: str = ""
    started_at: Time | None = None
    finished_at: Time | None = None


class ContainerState(View):
    waiting: dict[str, Any] | None = None
    running: dict[str, Any] | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(View):
    name: str = ""
    ready: bool = False
    started: bool | None = None
    restart_count: int = 0
    image: str = ""
    state: ContainerState | None = None
    last_state: ContainerState | None = None


class Condition(View):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: Time | None = None


class ContainerClaim(View):
    name: str = ""
    request: str = ""


class TopologySpreadConstraint(View):
    max_skew: Int32 = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class ContainerPort(View):
    name: str = ""
    host_port: Int32 = 0
    container_port: Int32 = 0
    protocol: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")


class LocalObjectReference(View):
    name: str = ""


class ObjectFieldSelector(View):
    api_version: str = ""
    field_path: str = ""


class ResourceFieldSelector(View):
    container_name: str = ""
    resource: str = ""
    divisor: QuantityValue | None = None


class KeySelector(View):
    """A ``configMapKeyRef`` or a ``secretKeyRef`` (the same fields)."""

    name: str = ""
    key: str = ""
    optional: bool | None = None


class FileKeySelector(View):
    volume_name: str = ""
    path: str = ""
    key: str = ""
    optional: bool | None = None


class EnvVarSource(View):
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    config_map_key_ref: KeySelector | None = None
    secret_key_ref: KeySelector | None = None
    file_key_ref: FileKeySelector | None = None


class EnvVar(View):
    name: str = ""
    value: str = ""
    value_from: EnvVarSource | None = None


class EnvSource(View):
    """A ``configMapRef`` or a ``secretRef`` of ``envFrom`` (the same fields)."""

    name: str = ""
    optional: bool | None = None


class EnvFromSource(View):
    prefix: str = ""
    config_map_ref: EnvSource | None = None
    secret_ref: EnvSource | None = None


class ExecAction(View):
    command: list[str] = []


class HTTPHeader(View):
    name: str = ""
    value: str = ""


class HTTPGetAction(View):
    path: str = ""
    port: IntOrString = 0
    host: str = ""
    scheme: str = ""
    http_headers: list[HTTPHeader] = []
    protocol: str | None = None


class TCPSocketAction(View):
    port: IntOrString = 0
    host: str = ""


class GRPCAction(View):
    port: Int32 = 0
    service: str | None = None
    mode: str | None = None


class SleepAction(View):
    seconds: int = 0


class Probe(View):
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: Int32 = 0
    timeout_seconds: Int32 = 0
    period_seconds: Int32 = 0
    success_threshold: Int32 = 0
    failure_threshold: Int32 = 0
    termination_grace_period_seconds: int | None = None


class LifecycleHandler(View):
    """A ``postStart`` or ``preStop`` hook."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None


class Lifecycle(View):
    post_start: LifecycleHandler | None = None
    pre_stop: LifecycleHandler | None = None
    stop_signal: str | None = None


class ContainerResizePolicy(View):
    resource_name: str = ""
    restart_policy: str = ""


class ContainerRestartRuleOnExitCodes(View):
    operator: str = ""
    values: list[Int32] = []


class ContainerRestartRule(View):
    action: str = ""
    exit_codes: ContainerRestartRuleOnExitCodes | None = None


class VolumeDevice(View):
    name: str = ""
    device_path: str = ""


class SELinuxOptions(View):
    user: str = ""
    role: str = ""
    type: str = ""
    level: str = ""


class SeccompProfile(View):
    """Also an ``appArmorProfile`` (the same fields)."""

    type: str = ""
    localhost_profile: str | None = None


class WindowsSecurityContextOptions(View):
    gmsa_credential_spec_name: str | None = None
    gmsa_credential_spec: str | None = None
    run_as_user_name: str | None = None
    host_process: bool | None = None


class Capabilities(View):
    add: list[str] = []
    drop: list[str] = []


class SecurityContext(View):
    """A container's ``securityContext``."""

    capabilities: Capabilities | None = None
    privileged: bool | None = None
    se_linux_options: SELinuxOptions | None = None
    windows_options: WindowsSecurityContextOptions | None = None
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    read_only_root_filesystem: bool | None = None
    allow_privilege_escalation: bool | None = None
    proc_mount: str | None = None
    seccomp_profile: SeccompProfile | None = None
    app_armor_profile: SeccompProfile | None = None


class Sysctl(View):
    name: str = ""
    value: str = ""


class PodSecurityContext(View):
    se_linux_options: SELinuxOptions | None = None
    windows_options: WindowsSecurityContextOptions | None = None
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    supplemental_groups: list[int] = []
    supplemental_groups_policy: str | None = None
    fs_group: int | None = None
    sysctls: list[Sysctl] = []
    fs_group_change_policy: str | None = None
    seccomp_profile: SeccompProfile | None = None
    app_armor_profile: SeccompProfile | None = None
    se_linux_change_policy: str | None = None


class EphemeralContainer(models.Container):
    """A ``spec.ephemeralContainers`` item: a container's fields (and their shapes: see
    :func:`drasched.api.shapes.struct_shape`) plus the container it targets."""

    target_container_name: str = ""


class PodDNSConfigOption(View):
    name: str = ""
    value: str | None = None


class PodDNSConfig(View):
    nameservers: list[str] = []
    searches: list[str] = []
    options: list[PodDNSConfigOption] = []


class EvictionResponder(View):
    name: str = ""
    priority: Int32 = 0


# ---- volume sources (core/v1 VolumeSource: one of these per volume) ----------------------------


class KeyToPath(View):
    key: str = ""
    path: str = ""
    mode: Int32 | None = None
    user: int | None = None


class HostPathVolumeSource(View):
    path: str = ""
    type: str | None = None


class EmptyDirVolumeSource(View):
    medium: str = ""
    size_limit: QuantityValue | None = None
    mode: Int32 | None = None


class SecretVolumeSource(View):
    secret_name: str = ""
    items: list[KeyToPath] = []
    default_mode: Int32 | None = None
    default_user: int | None = None
    optional: bool | None = None


class ConfigMapVolumeSource(View):
    name: str = ""
    items: list[KeyToPath] = []
    default_mode: Int32 | None = None
    default_user: int | None = None
    optional: bool | None = None


class PersistentVolumeClaimVolumeSource(View):
    claim_name: str = ""
    read_only: bool = False


class NFSVolumeSource(View):
    server: str = ""
    path: str = ""
    read_only: bool = False


class DownwardAPIVolumeFile(View):
    path: str = ""
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    mode: Int32 | None = None
    user: int | None = None


class DownwardAPIVolumeSource(View):
    items: list[DownwardAPIVolumeFile] = []
    default_mode: Int32 | None = None
    default_user: int | None = None


class ObjectProjection(View):
    """A projected ``secret`` or ``configMap`` (the same fields)."""

    name: str = ""
    items: list[KeyToPath] = []
    optional: bool | None = None


class DownwardAPIProjection(View):
    items: list[DownwardAPIVolumeFile] = []


class ServiceAccountTokenProjection(View):
    audience: str = ""
    expiration_seconds: int | None = None
    path: str = ""
    user: int | None = None


class ClusterTrustBundleProjection(View):
    name: str | None = None
    signer_name: str | None = None
    label_selector: LabelSelector | None = None
    optional: bool | None = None
    path: str = ""
    user: int | None = None


class PodCertificateProjection(View):
    signer_name: str = ""
    key_type: str = ""
    max_expiration_seconds: Int32 | None = None
    credential_bundle_path: str = ""
    key_path: str = ""
    certificate_chain_path: str = ""
    user_annotations: dict[str, str] = {}
    user: int | None = None


class VolumeProjection(View):
    secret: ObjectProjection | None = None
    downward_api: DownwardAPIProjection | None = msgspec.field(default=None, name="downwardAPI")
    config_map: ObjectProjection | None = None
    service_account_token: ServiceAccountTokenProjection | None = None
    cluster_trust_bundle: ClusterTrustBundleProjection | None = None
    pod_certificate: PodCertificateProjection | None = None


class ProjectedVolumeSource(View):
    sources: list[VolumeProjection] = []
    default_mode: Int32 | None = None
    default_user: int | None = None


class CSIVolumeSource(View):
    driver: str = ""
    read_only: bool | None = None
    fs_type: str | None = None
    volume_attributes: dict[str, str] = {}
    node_publish_secret_ref: LocalObjectReference | None = None


class TypedObjectReference(View):
    """A PVC's ``dataSourceRef`` (its ``dataSource`` has no ``namespace``)."""

    api_group: str | None = None
    kind: str = ""
    name: str = ""
    namespace: str | None = None


class TypedLocalObjectReference(View):
    api_group: str | None = None
    kind: str = ""
    name: str = ""


class VolumeResourceRequirements(View):
    limits: dict[str, QuantityValue] = {}
    requests: dict[str, QuantityValue] = {}


class PersistentVolumeClaimSpec(View):
    access_modes: list[str] = []
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements | None = None
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    data_source: TypedLocalObjectReference | None = None
    data_source_ref: TypedObjectReference | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimTemplate(View):
    metadata: models.ObjectMeta | None = None
    spec: PersistentVolumeClaimSpec | None = None


class EphemeralVolumeSource(View):
    volume_claim_template: PersistentVolumeClaimTemplate | None = None


class ImageVolumeSource(View):
    reference: str = ""
    pull_policy: str = ""


class GitRepoVolumeSource(View):
    repository: str = ""
    revision: str = ""
    directory: str = ""


class GCEPersistentDiskVolumeSource(View):
    pd_name: str = ""
    fs_type: str = ""
    partition: Int32 = 0
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(View):
    volume_id: str = msgspec.field(default="", name="volumeID")
    fs_type: str = ""
    partition: Int32 = 0
    read_only: bool = False


class ISCSIVolumeSource(View):
    target_portal: str = ""
    iqn: str = ""
    lun: Int32 = 0
    iscsi_interface: str = ""
    fs_type: str = ""
    read_only: bool = False
    portals: list[str] = []
    chap_auth_discovery: bool = False
    chap_auth_session: bool = False
    secret_ref: LocalObjectReference | None = None
    initiator_name: str | None = None


class GlusterfsVolumeSource(View):
    endpoints: str = ""
    path: str = ""
    read_only: bool = False


class RBDVolumeSource(View):
    monitors: list[str] = []
    image: str = ""
    fs_type: str = ""
    pool: str = ""
    user: str = ""
    keyring: str = ""
    secret_ref: LocalObjectReference | None = None
    read_only: bool = False


class FlexVolumeSource(View):
    driver: str = ""
    fs_type: str = ""
    secret_ref: LocalObjectReference | None = None
    read_only: bool = False
    options: dict[str, str] = {}


class CinderVolumeSource(View):
    volume_id: str = msgspec.field(default="", name="volumeID")
    fs_type: str = ""
    read_only: bool = False
    secret_ref: LocalObjectReference | None = None


class PortworxVolumeSource(View):
    volume_id: str = msgspec.field(default="", name="volumeID")
    fs_type: str = ""
    read_only: bool = False


class StorageOSVolumeSource(View):
    volume_name: str = ""
    volume_namespace: str = ""
    fs_type: str = ""
    read_only: bool = False
    secret_ref: LocalObjectReference | None = None


class CephFSVolumeSource(View):
    monitors: list[str] = []
    path: str = ""
    user: str = ""
    secret_file: str = ""
    secret_ref: LocalObjectReference | None = None
    read_only: bool = False


class FlockerVolumeSource(View):
    dataset_name: str = ""
    dataset_uuid: str = msgspec.field(default="", name="datasetUUID")


class FCVolumeSource(View):
    target_wwns: list[str] = msgspec.field(default_factory=list, name="targetWWNs")
    lun: Int32 | None = None
    fs_type: str = ""
    read_only: bool = False
    wwids: list[str] = []


class AzureFileVolumeSource(View):
    secret_name: str = ""
    share_name: str = ""
    read_only: bool = False


class VsphereVirtualDiskVolumeSource(View):
    volume_path: str = ""
    fs_type: str = ""
    storage_policy_name: str = ""
    storage_policy_id: str = msgspec.field(default="", name="storagePolicyID")


class QuobyteVolumeSource(View):
    registry: str = ""
    volume: str = ""
    read_only: bool = False
    user: str = ""
    group: str = ""
    tenant: str = ""


class AzureDiskVolumeSource(View):
    disk_name: str = ""
    data_disk_uri: str = msgspec.field(default="", name="diskURI")
    caching_mode: str | None = None
    fs_type: str | None = None
    read_only: bool | None = None
    kind: str | None = None


class PhotonPersistentDiskVolumeSource(View):
    pd_id: str = msgspec.field(default="", name="pdID")
    fs_type: str = ""


class ScaleIOVolumeSource(View):
    gateway: str = ""
    system: str = ""
    secret_ref: LocalObjectReference | None = None
    ssl_enabled: bool = False
    protection_domain: str = ""
    storage_pool: str = ""
    storage_mode: str = ""
    volume_name: str = ""
    fs_type: str = ""
    read_only: bool = False


class Volume(View):
    """A pod volume: its name and its source (one of these, checked field by field)."""

    name: str = ""
    host_path: HostPathVolumeSource | None = None
    empty_dir: EmptyDirVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    git_repo: GitRepoVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    nfs: NFSVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    glusterfs: GlusterfsVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    flex_volume: FlexVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    cephfs: CephFSVolumeSource | None = None
    flocker: FlockerVolumeSource | None = None
    downward_api: DownwardAPIVolumeSource | None = msgspec.field(default=None, name="downwardAPI")
    fc: FCVolumeSource | None = None
    azure_file: AzureFileVolumeSource | None = None
    config_map: ConfigMapVolumeSource | None = None
    vsphere_volume: VsphereVirtualDiskVolumeSource | None = None
    quobyte: QuobyteVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    photon_persistent_disk: PhotonPersistentDiskVolumeSource | None = None
    projected: ProjectedVolumeSource | None = None
    portworx_volume: PortworxVolumeSource | None = None
    scale_io: ScaleIOVolumeSource | None = msgspec.field(default=None, name="scaleIO")
    storageos: StorageOSVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    image: ImageVolumeSource | None = None


class PodReadinessGate(View):
    condition_type: str = ""


class HostAlias(View):
    ip: str = ""
    hostnames: list[str] = []


class PodOS(View):
    name: str = ""


class VolumeMount(View):
    name: str = ""
    read_only: bool = False
    recursive_read_only: str | None = None
    mount_path: str = ""
    sub_path: str = ""
    mount_propagation: str | None = None
    sub_path_expr: str = ""
    bind_mount_options: list[str] = []


# ---- kinds without a view elsewhere ------------------------------------------------------------


class ConfigMap(View):
    """ConfigMap ``data`` values are strings; a YAML alias tree is not one."""

    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    data: dict[str, str] = {}
    binary_data: dict[str, str] = {}
    immutable: bool | None = None


class Overhead(View):
    pod_fixed: dict[str, str | int | float] = {}


class Scheduling(View):
    node_selector: dict[str, str] = {}
    tolerations: list[models.Toleration] = []


class RuntimeClass(View):
    """node.k8s.io/v1: what the RuntimeClass admission plugin copies into a new pod."""

    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    handler: str = ""
    overhead: Overhead | None = None
    scheduling: Scheduling | None = None


class ServiceAccount(View):
    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)


class LeaseSpec(View):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class Lease(View):
    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)


class PodDisruptionBudgetSpec(View):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(View):
    observed_generation: int = 0
    disrupted_pods: dict[str, str] = {}
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    conditions: list[Condition] = []


class PodDisruptionBudget(View):
    metadata: models.ObjectMeta = msgspec.field(default_factory=models.ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


class PodSchedulingGate(View):
    name: str = ""


class PodSchedulingGroup(View):
    """``spec.schedulingGroup`` (upstream gang API): the PodGroup a pod belongs to."""

    pod_group_name: str | None = None


class WorkloadReference(View):
    """``spec.workloadRef`` (Kubernetes 1.35's gang API)."""

    name: str = ""
    pod_group: str = ""
    pod_group_replica_key: str = ""
