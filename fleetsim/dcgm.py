"""A dcgm-exporter for one replica's GPUs, fed by the engines' simulated activity.

Default counters of the reference (section 9.1), in the exporter's CSV order, plus
the four NVLink error totals the default CSV ships commented out (enabled here, as
NVLink health monitoring needs them), with its label template: gpu, UUID,
pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION, then attribute and
pod-mapping labels sorted by name. Gauges describe the last collection interval, as
the exporter's do; counters count since the node booted.
"""

from __future__ import annotations

import math

from fleetsim.config import DRIVER_VERSION, NAMESPACE
from fleetsim.families import Family, Labels
from fleetsim.replica import Replica

COLLECT_INTERVAL_S = 10.0
AMBIENT_C = 31.0
DEGREES_PER_WATT = 0.062
THERMAL_TAU_S = 90.0
IDLE_SM_CLOCK = {"H100": 345, "A100": 210, "L40S": 210}
CONTEXT_MIB = 520  # CUDA context of the serving process
RESERVED_MIB = {"H100": 537, "A100": 0, "L40S": 451}
XID_MESSAGES = {0: "No Error", 74: "NVLink Error"}
# PCIe retries: link-level replays happen at the bit error rate the PCIe spec allows a
# healthy link (1e-12), so a GPU shows a few since boot and more when PCIe gets busy.
PCIE_BER = 1e-12
PCIE_IDLE_BYTES_PER_S = (1.1e6, 2.3e6)  # (TX, RX): driver, telemetry and launch traffic
PCIE_BYTES_PER_TOKEN = (24.0, 96.0)  # (TX, RX): sampled token ids out, inputs in
# A degrading NVLink (not pinned by the reference; see fleetsim/README.md): its flits
# fail CRC at this bit error rate, each failed flit is replayed, and the link drops
# into recovery (retraining) this often. While it recovers, the hop's peer traffic
# takes the PCIe path, so NVLink bytes fall and PCIe bytes rise on both of its ends.
NVLINK_DEGRADED_BER = 1e-10
NVLINK_DATA_CRC_SHARE = 0.3  # of the CRC errors, those in data (not flow-control) flits
NVLINK_RECOVERY_EVERY_S = 20.0
NVLINK_ERRORS = (
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
)

FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    # Commented out in the exporter's default CSV; help texts as that CSV words them.
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
     "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter",
     "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter",
     "Total number of NVLink recovery errors."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus - including both protocol headers and "
     "data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
     "The rate of data received over the PCIe bus - including both protocol headers and "
     "data payloads - in bytes per second."),
)  # fmt: skip


class GpuState:
    __slots__ = (
        "values", "energy_mj", "temp", "xid", "nvlink_kib", "last", "pcie_bits",
        "link_fault", "nvlink_errors",
    )  # fmt: skip

    def __init__(self, temp: float) -> None:
        self.values: dict[str, float] = {}
        self.energy_mj = 0.0
        self.temp = temp
        self.xid = 0
        self.nvlink_kib = 0.0
        self.last = [0.0] * 5  # activity snapshot at the previous collection
        self.pcie_bits = 0.0  # moved over PCIe since boot (replays follow from it)
        self.link_fault = 0.0  # share of the time a failing NVLink spends in recovery
        self.nvlink_errors = dict.fromkeys(NVLINK_ERRORS, 0.0)


class DcgmExporter:
    def __init__(self, replica: Replica) -> None:
        self.replica = replica
        cfg = replica.cfg
        self.gpus = [GpuState(AMBIENT_C + cfg.gpu.idle_watts * DEGREES_PER_WATT) for _ in cfg.gpus]
        for slot, state in zip(cfg.gpus, self.gpus, strict=True):
            # The energy counter runs since the node booted, days before the fleet started.
            uptime_s = (int(slot.uuid[4:12], 16) % 40 + 3) * 86400
            state.energy_mj = cfg.gpu.idle_watts * uptime_s * 1000.0
            state.pcie_bits = 8 * sum(PCIE_IDLE_BYTES_PER_S) * uptime_s
        self.last_t = 0.0
        self.temp_offset = 0.0  # cooling trouble raises every target temperature
        self._tokens_seen: dict[int, float] = {}
        self.sample(0.0)

    def set_xid(self, code: int, gpu_positions: list[int]) -> None:
        for pos in gpu_positions:
            self.gpus[pos].xid = code

    def set_link_fault(self, share: float, gpu_positions: list[int]) -> None:
        """The NVLink between these GPUs fails CRC checks and spends `share` of the time in
        recovery (0 heals it)."""
        for pos in gpu_positions:
            self.gpus[pos].link_fault = share

    def sample(self, t: float) -> None:
        """Collect: turn activity since the last collection into the exporter's gauges."""
        replica, cfg = self.replica, self.replica.cfg
        gpu = cfg.gpu
        dt = max(t - self.last_t, 1e-9)
        self.last_t = t
        # Token ids and sampled tokens are what crosses PCIe while serving.
        tokens = {e.rank: e.stats.iter_tokens.sum for e in replica.engines}
        token_rate = {
            rank: max(0.0, n - self._tokens_seen.get(rank, 0.0)) / dt for rank, n in tokens.items()
        }
        self._tokens_seen = tokens
        for pos, state in enumerate(self.gpus):
            rank = pos // cfg.tp
            now = replica.activity(rank)
            _, gpu_s, flops, hbm, link = (a - b for a, b in zip(now, state.last, strict=True))
            state.last = now
            clock_f = replica.clock_factor if replica.up else 1.0
            util = min(1.0, max(0.0, gpu_s / dt))
            tensor = min(1.0, max(0.0, flops / (gpu.bf16_flops * clock_f * dt)))
            dram = min(1.0, max(0.0, hbm / (gpu.hbm_bytes_per_s * replica.mem_factor * dt)))
            activity = min(1.0, 0.25 * util + 0.45 * tensor + 0.4 * dram)
            # Dynamic power scales roughly with clock times voltage squared.
            power = gpu.idle_watts + (gpu.tdp_watts - gpu.idle_watts) * activity * clock_f**2
            state.energy_mj += power * dt * 1000.0
            target = AMBIENT_C + power * DEGREES_PER_WATT + self.temp_offset
            state.temp += (target - state.temp) * (1 - math.exp(-dt / THERMAL_TAU_S))
            detour = 0.0
            if state.link_fault and gpu.nvlink and link > 0:
                # The failing link is one hop of the ring: half of this GPU's peer traffic.
                hop = link / 2.0
                detour = hop * state.link_fault
                errors = state.nvlink_errors
                crc = hop * (1.0 - state.link_fault) * 8 * NVLINK_DEGRADED_BER
                errors[NVLINK_ERRORS[0]] += crc * (1 - NVLINK_DATA_CRC_SHARE)
                errors[NVLINK_ERRORS[1]] += crc * NVLINK_DATA_CRC_SHARE
                errors[NVLINK_ERRORS[2]] += crc  # every failed flit is replayed
            if state.link_fault and gpu.nvlink:
                state.nvlink_errors[NVLINK_ERRORS[3]] += dt / NVLINK_RECOVERY_EVERY_S
            state.nvlink_kib += (link - detour) / 1024.0
            sm = gpu.sm_clock_mhz * clock_f if util > 0.02 else IDLE_SM_CLOCK[gpu.key]
            used = cfg.deployment.gpu_memory_utilization * gpu.memory_mib + CONTEXT_MIB
            used = used if replica.up else 0.0
            reserved = RESERVED_MIB[gpu.key]
            tokens_per_s = token_rate.get(rank, 0.0)
            tx = PCIE_IDLE_BYTES_PER_S[0] + PCIE_BYTES_PER_TOKEN[0] * tokens_per_s
            rx = PCIE_IDLE_BYTES_PER_S[1] + PCIE_BYTES_PER_TOKEN[1] * tokens_per_s
            tx += detour / 2.0 / dt
            rx += detour / 2.0 / dt
            state.pcie_bits += 8 * (tx + rx) * dt
            state.values = {
                "DCGM_FI_DEV_SM_CLOCK": round(sm),
                "DCGM_FI_DEV_MEM_CLOCK": round(gpu.mem_clock_mhz * replica.mem_factor),
                "DCGM_FI_DEV_MEMORY_TEMP": round(state.temp + 6) if gpu.key != "L40S" else 0,
                "DCGM_FI_DEV_GPU_TEMP": round(state.temp),
                "DCGM_FI_DEV_POWER_USAGE": round(power, 3),
                "DCGM_FI_DEV_GPU_UTIL": round(100 * util),
                "DCGM_FI_DEV_MEM_COPY_UTIL": round(100 * dram),
                "DCGM_FI_DEV_FB_FREE": round(gpu.memory_mib - used - reserved),
                "DCGM_FI_DEV_FB_USED": round(used),
                "DCGM_FI_DEV_FB_RESERVED": reserved,
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE": round(util * 0.96, 6),
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": round(tensor, 6),
                "DCGM_FI_PROF_DRAM_ACTIVE": round(dram, 6),
                "DCGM_FI_PROF_PCIE_TX_BYTES": round(tx),
                "DCGM_FI_PROF_PCIE_RX_BYTES": round(rx),
            }

    def families(self) -> list[Family]:
        cfg = self.replica.cfg
        pod_labels = (("container", "vllm"), ("namespace", NAMESPACE), ("pod", cfg.pod))
        out = []
        for name, type_, help_ in FIELDS:
            fam = Family(name, type_, help_)
            for slot, state in zip(cfg.gpus, self.gpus, strict=True):
                base: Labels = (
                    ("gpu", str(slot.index)),
                    ("UUID", slot.uuid),
                    ("pci_bus_id", slot.pci_bus_id),
                    ("device", f"nvidia{slot.index}"),
                    ("modelName", cfg.gpu.product),
                    ("Hostname", cfg.node),
                    ("DCGM_FI_DRIVER_VERSION", DRIVER_VERSION),
                )
                if name == "DCGM_FI_DEV_XID_ERRORS":
                    attrs = (("err_code", str(state.xid)), ("err_msg", XID_MESSAGES[state.xid]))
                    extra = tuple(sorted(pod_labels + attrs))
                    fam.add((*base, *extra), float(state.xid))
                else:
                    fam.add((*base, *pod_labels), float(self._value(name, state)))
            out.append(fam)
        return out

    def _value(self, name: str, state: GpuState) -> float:
        if name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
            return round(state.energy_mj)
        if name == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":
            return round(state.nvlink_kib) if self.replica.cfg.gpu.nvlink else 0
        if name == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER":
            return math.floor(state.pcie_bits * PCIE_BER)
        if name in state.nvlink_errors:
            return math.floor(state.nvlink_errors[name])
        return state.values.get(name, 0)
