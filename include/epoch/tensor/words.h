// An enum's words in one table: the name of each value, parsing a word back (ConfigError naming
// the setting and the valid words), and the list a flag's help and choices show. Every enum a
// user spells (flags, config.json, study configurations) is read and written through its table.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "epoch/tensor/error.h"

namespace epoch {

template <typename Enum>
struct Word {
  Enum value;
  const char* name;
};

/// The word of `value` ("?" for a value the table lacks, which a complete table never does).
template <typename Enum, std::size_t N>
constexpr const char* word_of(const std::array<Word<Enum>, N>& table, Enum value) {
  for (const Word<Enum>& w : table)
    if (w.value == value) return w.name;
  return "?";
}

/// The table's words, in order (a flag's choices).
template <typename Enum, std::size_t N>
std::vector<std::string> words_of(const std::array<Word<Enum>, N>& table) {
  std::vector<std::string> out;
  for (const Word<Enum>& w : table) out.emplace_back(w.name);
  return out;
}

/// "a, b or c", for messages and help.
inline std::string words_listed(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

/// The table's words as "a, b or c".
template <typename Enum, std::size_t N>
std::string words_listed(const std::array<Word<Enum>, N>& table) {
  return words_listed(words_of(table));
}

/// The value spelled `word`; ConfigError "<what> <word>: expected a, b or c" otherwise.
template <typename Enum, std::size_t N>
Enum parse_word(const std::array<Word<Enum>, N>& table, std::string_view word,
                std::string_view what) {
  for (const Word<Enum>& w : table)
    if (word == w.name) return w.value;
  EPOCH_THROW(ConfigError, what, " ", word, ": expected ", words_listed(table));
}

}  // namespace epoch
