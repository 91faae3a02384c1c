// A least-recently-used map with a cost budget: each entry costs what the caller says (bytes, or 1 for a count), and
// putting one past the budget drops the least recently used until it fits. The daemon's caches are these, so its
// memory is bounded whatever the history it serves (issue 61). Header-only; not thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>

namespace tsum {

template <class K, class V>
class Lru {
 public:
  // on_evict: told of each entry put() drops to make room (not of erase() or clear()).
  explicit Lru(size_t budget, std::function<void(const K&, V&)> on_evict = nullptr)
      : budget_(budget), on_evict_(std::move(on_evict)) {}

  // The value of `key`, now the most recently used; nullptr when absent.
  V* find(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }
  // Puts `key` (replacing what it had) at a cost of `cost`. False: costlier than the whole budget, not kept.
  bool put(const K& key, V value, size_t cost = 1) {
    erase(key);
    if (cost > budget_) return false;
    while (used_ + cost > budget_ && !order_.empty()) {
      if (on_evict_) on_evict_(order_.back().key, order_.back().value);
      erase(order_.back().key);
    }
    order_.push_front({key, std::move(value), cost});
    index_[key] = order_.begin();
    used_ += cost;
    return true;
  }
  void erase(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    used_ -= it->second->cost;
    order_.erase(it->second);
    index_.erase(it);
  }
  void clear() {
    order_.clear();
    index_.clear();
    used_ = 0;
  }
  size_t size() const { return index_.size(); }
  size_t used() const { return used_; }

 private:
  struct Entry {
    K key;
    V value;
    size_t cost;
  };
  size_t budget_, used_ = 0;
  std::function<void(const K&, V&)> on_evict_;
  std::list<Entry> order_;
  std::unordered_map<K, typename std::list<Entry>::iterator> index_;
};

}  // namespace tsum
