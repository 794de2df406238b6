//! TMA tensor maps, encoded at launch from the plan's spec and the actual buffer and sizes.

use crate::ir::{DType, L2Promotion, TensorMapSpec};
use crate::layout::Swizzle;
use crate::{Error, Result};
use cudarc::driver::sys;

/// Encodes a tiled tensor map. `dims` are the view's extents and `strides` its strides in
/// elements (outermost first), `ptr` the buffer's device address. Rules the hardware imposes
/// are checked first ([`TensorMapSpec::check_view`]), with errors that name the argument.
pub fn encode(
    spec: &TensorMapSpec,
    arg_name: &str,
    ptr: u64,
    dims: &[i64],
    strides: &[i64],
) -> Result<sys::CUtensorMap> {
    let rank = dims.len();
    let bad = |message: String| Error::Argument {
        arg: arg_name.to_string(),
        message,
    };
    if !ptr.is_multiple_of(16) {
        return Err(bad(format!(
            "address 0x{ptr:x} is not 16-byte aligned, which TMA requires"
        )));
    }
    let byte_strides = spec.check_view(dims, strides).map_err(bad)?;
    // innermost first; the innermost stride is implicit (the element size)
    let global_dim: Vec<u64> = dims.iter().rev().map(|&d| d as u64).collect();
    let strides: Vec<u64> = byte_strides.iter().rev().copied().collect();
    let box_dim: Vec<u32> = spec.box_shape.iter().rev().copied().collect();
    let element_strides = vec![1u32; rank];
    let dtype = match spec.dtype {
        DType::F16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BF16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::I32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
        DType::U32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        DType::I64 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT64,
        DType::U64 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        // TMA moves bytes: a byte-wide element of any type is one
        t if t.bits() == 8 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        t => {
            return Err(bad(format!(
                "{t} elements are narrower than a byte, which TMA cannot copy on this device"
            )))
        }
    };
    let swizzle = match spec.swizzle {
        Swizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        Swizzle::B32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        Swizzle::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        Swizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every array has `rank` (strides: `rank - 1`) entries as the API requires, and
    // `map` is a properly aligned CUtensorMap the call fills in.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            rank as u32,
            ptr as *mut std::ffi::c_void,
            global_dim.as_ptr(),
            strides.as_ptr(),
            box_dim.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            promotion(spec.l2_promotion),
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::Driver {
            call: "cuTensorMapEncodeTiled",
            message: format!("{r:?} for `{arg_name}` with dims {dims:?}"),
        });
    }
    Ok(map)
}

/// The driver's value for a map's L2 promotion.
fn promotion(p: L2Promotion) -> sys::CUtensorMapL2promotion {
    use sys::CUtensorMapL2promotion as P;
    match p {
        L2Promotion::None => P::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        L2Promotion::B64 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        L2Promotion::B128 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        L2Promotion::B256 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    }
}
