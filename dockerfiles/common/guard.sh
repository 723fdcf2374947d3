#!/bin/sh
# rocm-vllm guard: start the command only when every GPU this container sees is one the image
# carries code for (ROCM_VLLM_GFX, the rocm-vllm.gfx label of the image), instead of vLLM failing with
# "HIP error: invalid device function" minutes later. Exit 78 (EX_CONFIG) with one line.
# A GPU is visible when its KFD topology node has a render node in the /dev/dri of this container.
# HSA_OVERRIDE_GFX_VERSION, when set, is what the runtime loads code for.
want="${ROCM_VLLM_GFX:-}"
sysfs="${ROCM_VLLM_GUARD_SYSFS:-/sys/class/kfd/kfd}"
dev="${ROCM_VLLM_GUARD_DEV:-/dev}"
if [ -z "${want}" ]; then
    echo "rocm-vllm guard: ROCM_VLLM_GFX is not set; the image does not say its targets" >&2
    exit 78
fi
seen=""
for props in "${sysfs}"/topology/nodes/*/properties; do
    [ -r "${props}" ] || continue
    v=$(sed -n "s/^gfx_target_version \([0-9][0-9]*\)\$/\1/p" "${props}")
    minor=$(sed -n "s/^drm_render_minor \([0-9][0-9]*\)\$/\1/p" "${props}")
    if [ -z "${v}" ] || [ "${v}" -eq 0 ] || [ -z "${minor}" ]; then
        continue
    fi
    [ -e "${dev}/dri/renderD${minor}" ] || continue
    gfx=$(printf "gfx%d%x%x" $((v / 10000)) $((v / 100 % 100)) $((v % 100)))
    if [ -n "${HSA_OVERRIDE_GFX_VERSION:-}" ]; then
        o="${HSA_OVERRIDE_GFX_VERSION}"
        gfx=$(printf "gfx%d%x%x" "${o%%.*}" "$(echo "${o}" | cut -d. -f2)" "${o##*.}")
    fi
    case ";${want};" in
        *";${gfx};"*) seen="${seen} ${gfx}" ;;
        *)
            echo "rocm-vllm guard: a visible GPU is ${gfx}, but this image carries GPU code for ${want} only (vLLM would fail with HIP error: invalid device function); run an image built for ${gfx}" >&2
            exit 78
            ;;
    esac
done
if [ -z "${seen}" ]; then
    echo "rocm-vllm guard: no AMD GPU is visible in this container; pass --device /dev/kfd --device /dev/dri" >&2
    exit 78
fi
exec "$@"
