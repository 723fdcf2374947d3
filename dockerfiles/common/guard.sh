#!/bin/sh
# rocm-vllm guard: start the command only when every GPU it will use is one the image carries
# code for (ROCM_VLLM_GFX, the rocm-vllm.gfx label of the image), instead of vLLM failing with
# "HIP error: invalid device function" minutes later. Exit 78 (EX_CONFIG) with one line.
# The GPUs it will use are the ones the runtime enumerates, as it enumerates them:
# - libhsakmt: KFD topology nodes in node-id order that have a gfx_target_version and whose
#   render node is in this container's /dev/dri (ROCm/ROCR-Runtime@2f2de556
#   libhsakmt/src/topology.c, topology_sysfs_check_node_supported);
# - ROCR_VISIBLE_DEVICES, when set (empty: none), picks among those by index or by a unique
#   prefix of the UUID GPU-<unique_id in 16 hex digits> (ROCm/ROCR-Runtime@adae6c61
#   src/core/runtime/amd_filter_device.cpp);
# - HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES when that is empty, indexes into what ROCR left
#   (ROCm/clr@01c0e69d rocclr/device/rocm/rocdevice.cpp, Device::init).
# So an integrated GPU left out by those variables is not refused. A value the runtime would stop
# at (out of range, not an index, a UUID that matches no GPU or several) is refused with one
# line: the runtime would silently run on fewer GPUs than asked. Values from the environment
# are only compared and matched, never evaluated.
# HSA_OVERRIDE_GFX_VERSION, when set, is what the runtime loads code for.
want="${ROCM_VLLM_GFX:-}"
sysfs="${ROCM_VLLM_GUARD_SYSFS:-/sys/class/kfd/kfd}"
dev="${ROCM_VLLM_GUARD_DEV:-/dev}"
set -f
# A line break: the agents list is one line an agent, split on it (globbing is off).
nl=$(printf '\nx')
nl="${nl%x}"
say() {
    echo "rocm-vllm guard: $*" >&2
    exit 78
}
if [ -z "${want}" ]; then
    say "ROCM_VLLM_GFX is not set; the image does not say its targets"
fi
# A value longer than any real device list is refused before it is split.
for v in "${ROCR_VISIBLE_DEVICES:-}" "${HIP_VISIBLE_DEVICES:-}" "${CUDA_VISIBLE_DEVICES:-}"; do
    [ "${#v}" -le 4096 ] || say "a *_VISIBLE_DEVICES value is longer than 4096 characters"
done
over=""
if [ -n "${HSA_OVERRIDE_GFX_VERSION:-}" ]; then
    o="${HSA_OVERRIDE_GFX_VERSION}"
    case "${o}" in
        *[!0-9.]* | .* | *. | *..* | *.*.*.* | 0[0-9]* | *.0[0-9]*) o="" ;;
        *.*.*) ;;
        *) o="" ;;
    esac
    [ "${#o}" -le 11 ] || o=""
    [ -n "${o}" ] || say "HSA_OVERRIDE_GFX_VERSION is not major.minor.stepping (such as 11.0.0)"
    mi="${o#*.}"
    over=$(printf "gfx%d%x%x" "${o%%.*}" "${mi%%.*}" "${o##*.}")
fi

# The agents, in the runtime's order: "gfx uuid" a line, the uuid in lower case (gpu-<16 hex>),
# or - where unique_id is 0 or absent.
agents=""
n=0
i=0
while [ "${i}" -lt 4096 ] && [ -d "${sysfs}/topology/nodes/${i}" ]; do
    props="${sysfs}/topology/nodes/${i}/properties"
    i=$((i + 1))
    [ -r "${props}" ] || continue
    v=$(sed -n "s/^gfx_target_version \([0-9][0-9]*\)\$/\1/p" "${props}" 2>/dev/null)
    minor=$(sed -n "s/^drm_render_minor \([0-9][0-9]*\)\$/\1/p" "${props}" 2>/dev/null)
    uid=$(sed -n "s/^unique_id \([0-9][0-9]*\)\$/\1/p" "${props}" 2>/dev/null)
    if [ -z "${v}" ] || [ "${v}" -eq 0 ] || [ -z "${minor}" ]; then
        continue
    fi
    [ -e "${dev}/dri/renderD${minor}" ] || continue
    gfx=$(printf "gfx%d%x%x" $((v / 10000)) $((v / 100 % 100)) $((v % 100)))
    uuid="-"
    if [ -n "${uid}" ] && [ "${uid}" != 0 ]; then
        uuid=$(printf "gpu-%016x" "${uid}")
    fi
    agents="${agents}${gfx} ${uuid}${nl}"
    n=$((n + 1))
done
lower() {
    printf '%s' "$1" | tr 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' 'abcdefghijklmnopqrstuvwxyz'
}
# shown VALUE: VALUE as one printable line of at most 40 characters, for a message.
shown() {
    printf '%s' "$1" | tr -c '[:print:]' '?' | cut -c1-40
}
# pick N: line N (from 0) of agents.
pick() {
    printf '%s' "${agents}" | sed -n "$(($1 + 1))p"
}
# index TOKEN COUNT: TOKEN when it is a plain decimal index below COUNT, else empty.
index() {
    case "$1" in
        "" | *[!0-9]* | 0?*) return 0 ;;
    esac
    [ "${#1}" -le 4 ] && [ "$1" -lt "$2" ] && printf '%s' "$1"
}
# uuid TOKEN first|unique: the index of the agent whose UUID starts with TOKEN (any case): the
# first such (HIP), or the only one (ROCR refuses a prefix that several share); else empty.
uuid() {
    t=$(lower "$1")
    k=0
    found=""
    IFS="${nl}"
    for u in ${agents}; do
        unset IFS
        u="${u#* }"
        case "${u}" in
            gpu-?*)
                case "${u}" in
                    "${t}"*)
                        [ -z "${found}" ] || return 0
                        found="${k}"
                        [ "$2" = unique ] || break
                        ;;
                esac
                ;;
        esac
        k=$((k + 1))
    done
    printf '%s' "${found}"
}

if [ -n "${ROCR_VISIBLE_DEVICES+set}" ]; then
    chosen=""
    m=0
    IFS=,
    for t in ${ROCR_VISIBLE_DEVICES}; do
        unset IFS
        # ROCR reads at most as many tokens as there are GPUs; the rest never count.
        [ "${m}" -lt "${n}" ] || break
        t=$(printf '%s' "${t}" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
        case "${t}" in
            [Gg]*)
                k=""
                [ "${#t}" -ge 5 ] && [ "${#t}" -le 20 ] && k=$(uuid "${t}" unique)
                ;;
            *) k=$(index "${t}" "${n}") ;;
        esac
        [ -n "${k}" ] || say "ROCR_VISIBLE_DEVICES names \"$(shown "${t}")\", which picks none of the ${n} GPU(s) this container has (an index 0-$((n - 1)), or a prefix of exactly one GPU's UUID GPU-...: the partitions of one GPU share it); the runtime would stop at it and run on fewer GPUs than asked"
        case " ${chosen} " in
            *" ${k} "*) say "ROCR_VISIBLE_DEVICES names GPU ${k} twice (\"$(shown "${t}")\"); the runtime would stop there and run on fewer GPUs than asked" ;;
        esac
        chosen="${chosen} ${k}"
        m=$((m + 1))
    done
    unset IFS
    left=""
    for k in ${chosen}; do
        left="${left}$(pick "${k}")${nl}"
    done
    agents="${left}"
    n="${m}"
fi

hvd="${HIP_VISIBLE_DEVICES:-}"
hname=HIP_VISIBLE_DEVICES
if [ -z "${hvd}" ]; then
    hvd="${CUDA_VISIBLE_DEVICES:-}"
    hname=CUDA_VISIBLE_DEVICES
fi
if [ -n "${hvd}" ] && [ "${n}" -gt 0 ]; then
    chosen=""
    IFS=,
    for t in ${hvd}; do
        unset IFS
        case "${t}" in
            GPU-*) k=$(uuid "${t}" first) ;;
            *) k=$(index "${t}" "${n}") ;;
        esac
        [ -n "${k}" ] || say "${hname} names \"$(shown "${t}")\", which is none of the ${n} GPU(s) left to this process (an index 0-$((n - 1)) or a UUID GPU-...); the runtime would stop at it and run on fewer GPUs than asked"
        # HIP skips a repeated index.
        case " ${chosen} " in
            *" ${k} "*) ;;
            *) chosen="${chosen} ${k}" ;;
        esac
    done
    unset IFS
    left=""
    m=0
    for k in ${chosen}; do
        left="${left}$(pick "${k}")${nl}"
        m=$((m + 1))
    done
    agents="${left}"
    n="${m}"
fi

if [ "${n}" -eq 0 ]; then
    say "no AMD GPU is visible to this process; pass --device /dev/kfd --device /dev/dri, and check ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES"
fi
k=0
IFS="${nl}"
for g in ${agents}; do
    unset IFS
    gfx="${over:-${g%% *}}"
    case ";${want};" in
        *";${gfx};"*) ;;
        *) say "a visible GPU is ${gfx} (GPU ${k} of the ${n} this process sees), but this image carries GPU code for ${want} only (vLLM would fail with HIP error: invalid device function); run an image built for ${gfx}, or leave that GPU out with HIP_VISIBLE_DEVICES" ;;
    esac
    k=$((k + 1))
done
exec "$@"
