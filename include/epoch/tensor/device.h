// Element types and devices: the two properties every tensor carries and every op dispatches on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace epoch {

/// Element type of a tensor. Kernels exist for f32; i32 holds class labels, u8 raw pixels.
enum class DType : std::uint8_t { f32, i32, u8 };

/// Bytes per element of a dtype.
std::size_t dtype_size(DType dtype);
/// "f32", "i32", "u8" (the safetensors names are F32, I32, U8).
const char* dtype_name(DType dtype);

enum class DeviceType : std::uint8_t { cpu, cuda };

/// Where a tensor's bytes live: the host, or CUDA device `index`.
struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device&) const = default;
  /// "cpu" or "cuda:0".
  std::string str() const;
};

/// Parses "cpu", "cuda" or "cuda:N" (ConfigError otherwise; it does not check the device exists).
Device parse_device(const std::string& text);

}  // namespace epoch
