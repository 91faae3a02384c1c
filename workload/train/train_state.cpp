#include "workload/train/train_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <sys/stat.h>

#include <cstdio>
#include <mutex>

#include "workload/optim/adadelta.h"
#include "workload/optim/nadam.h"
#include "workload/optim/optim_state.h"

namespace tsum::workload {
namespace {

constexpr std::int64_t kStateVersion = 1;

// Each optimizer's per-parameter state, field by field, for a visitor io(name, field).
template <class Io>
void fields(torch::optim::AdamParamState& s, Io& io) {
  io("step", s.step());
  io("exp_avg", s.exp_avg());
  io("exp_avg_sq", s.exp_avg_sq());
  io("max_exp_avg_sq", s.max_exp_avg_sq());
}
template <class Io>
void fields(torch::optim::SGDParamState& s, Io& io) {
  io("momentum_buffer", s.momentum_buffer());
}
template <class Io>
void fields(torch::optim::RMSpropParamState& s, Io& io) {
  io("step", s.step());
  io("square_avg", s.square_avg());
  io("momentum_buffer", s.momentum_buffer());
  io("grad_avg", s.grad_avg());
}
template <class Io>
void fields(torch::optim::AdagradParamState& s, Io& io) {
  io("sum", s.sum());
  io("step", s.step());
}
template <class Io>
void fields(AdadeltaParamState& s, Io& io) {
  io("square_avg", s.square_avg());
  io("delta_avg", s.delta_avg());
}
template <class Io>
void fields(NadamParamState& s, Io& io) {
  io("step", s.step());
  io("m_schedule", s.m_schedule());
  io("m", s.m());
  io("v", s.v());
}

// Calls fields() on the state as the optimizer's own type. False for an optimizer tsum-train does not make.
template <class Io>
bool visit(const torch::optim::Optimizer& o, torch::optim::OptimizerParamState& s, Io& io) {
  auto as = [&](auto* optimizer, auto* state) {
    using State = std::remove_pointer_t<decltype(state)>;
    if (optimizer == nullptr) return false;
    fields(dynamic_cast<State&>(s), io);
    return true;
  };
  return as(dynamic_cast<const torch::optim::Adam*>(&o), static_cast<torch::optim::AdamParamState*>(nullptr)) ||
         as(dynamic_cast<const torch::optim::SGD*>(&o), static_cast<torch::optim::SGDParamState*>(nullptr)) ||
         as(dynamic_cast<const torch::optim::RMSprop*>(&o), static_cast<torch::optim::RMSpropParamState*>(nullptr)) ||
         as(dynamic_cast<const torch::optim::Adagrad*>(&o), static_cast<torch::optim::AdagradParamState*>(nullptr)) ||
         as(dynamic_cast<const Adadelta*>(&o), static_cast<AdadeltaParamState*>(nullptr)) ||
         as(dynamic_cast<const Nadam*>(&o), static_cast<NadamParamState*>(nullptr));
}

std::unique_ptr<torch::optim::OptimizerParamState> new_state(const torch::optim::Optimizer& o) {
  if (dynamic_cast<const torch::optim::Adam*>(&o)) return std::make_unique<torch::optim::AdamParamState>();
  if (dynamic_cast<const torch::optim::SGD*>(&o)) return std::make_unique<torch::optim::SGDParamState>();
  if (dynamic_cast<const torch::optim::RMSprop*>(&o)) return std::make_unique<torch::optim::RMSpropParamState>();
  if (dynamic_cast<const torch::optim::Adagrad*>(&o)) return std::make_unique<torch::optim::AdagradParamState>();
  if (dynamic_cast<const Adadelta*>(&o)) return std::make_unique<AdadeltaParamState>();
  if (dynamic_cast<const Nadam*>(&o)) return std::make_unique<NadamParamState>();
  return nullptr;
}

std::vector<torch::Tensor> all_params(torch::optim::Optimizer& o) {
  std::vector<torch::Tensor> out;
  for (auto& group : o.param_groups()) {
    for (auto& p : group.params()) out.push_back(p);
  }
  return out;
}

struct Writer {
  torch::serialize::OutputArchive& archive;
  std::string prefix;
  void operator()(const char* name, torch::Tensor& t) {
    if (t.defined()) archive.write(prefix + name, t.to(torch::kCPU).contiguous(), true);
  }
  void operator()(const char* name, std::int64_t& v) { archive.write(prefix + name, c10::IValue(v)); }
  void operator()(const char* name, double& v) { archive.write(prefix + name, c10::IValue(v)); }
};

struct Reader {
  torch::serialize::InputArchive& archive;
  std::string prefix;
  const torch::Tensor& param;
  // A tensor shaped like its parameter takes the parameter's device and layout (a channels-last convolution's
  // moments stay channels-last, as the optimizer made them: its fused update needs matching layouts).
  void operator()(const char* name, torch::Tensor& t) {
    torch::Tensor saved;
    if (!archive.try_read(prefix + name, saved, true)) return;
    if (saved.sizes() == param.sizes()) {
      t = torch::empty_like(param, torch::MemoryFormat::Preserve).copy_(saved);
    } else {
      t = saved.to(param.device());
    }
  }
  void operator()(const char* name, std::int64_t& v) {
    c10::IValue saved;
    if (archive.try_read(prefix + name, saved)) v = saved.toInt();
  }
  void operator()(const char* name, double& v) {
    c10::IValue saved;
    if (archive.try_read(prefix + name, saved)) v = saved.toDouble();
  }
};

}  // namespace

Status save_optimizer_state(torch::optim::Optimizer& optimizer, torch::serialize::OutputArchive& archive) {
  if (!new_state(optimizer)) return make_error(Code::invalid_argument, "this optimizer's state cannot be saved");
  const auto params = all_params(optimizer);
  auto& state = optimizer.state();
  archive.write("params", c10::IValue(static_cast<std::int64_t>(params.size())));
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto it = state.find(optim_state_key(params[i]));
    if (it == state.end()) continue;  // no step taken with it yet
    Writer w{archive, "p" + std::to_string(i) + "_"};
    archive.write(w.prefix + "present", c10::IValue(true));
    visit(optimizer, *it->second, w);
  }
  return {};
}

Status load_optimizer_state(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive) {
  if (!new_state(optimizer)) return make_error(Code::invalid_argument, "this optimizer's state cannot be loaded");
  const auto params = all_params(optimizer);
  c10::IValue n;
  if (!archive.try_read("params", n) || n.toInt() != static_cast<std::int64_t>(params.size())) {
    return make_error(Code::invalid_argument, "its optimizer state is for another model");
  }
  auto& state = optimizer.state();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string prefix = "p" + std::to_string(i) + "_";
    c10::IValue present;
    if (!archive.try_read(prefix + "present", present)) continue;
    auto s = new_state(optimizer);
    Reader r{archive, prefix, params[i]};
    visit(optimizer, *s, r);
    state[optim_state_key(params[i])] = std::move(s);
  }
  return {};
}

Result<std::int64_t> save_training_state(const std::string& path, Trainer& trainer, const TrainProgress& at) {
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive;
    archive.write("version", c10::IValue(kStateVersion));
    archive.write("model_name", c10::IValue(at.model));
    archive.write("epoch", c10::IValue(at.epoch));
    archive.write("learn_seconds", c10::IValue(at.learn_seconds));
    if (at.cursor.order.defined()) archive.write("order", at.cursor.order.to(torch::kCPU), true);
    archive.write("begin", c10::IValue(at.cursor.begin));
    archive.write("loss_sum", c10::IValue(at.cursor.loss_sum));
    archive.write("correct", c10::IValue(at.cursor.correct));
    archive.write("epoch_seconds", c10::IValue(at.cursor.seconds));
    archive.write("share_examples", c10::IValue(at.share_examples));
    if (at.order_rng.defined()) archive.write("order_rng", at.order_rng, true);
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      archive.write("rng", gen.get_state(), true);
    }
    if (auto st = trainer.save_state(archive); !st.ok()) return st.error();
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    return make_error(Code::unavailable, path + ": cannot write the checkpoint: " + e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return make_error(Code::unavailable, path + ": cannot put the checkpoint in place");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error(Code::unavailable, path + ": the checkpoint is missing");
  return static_cast<std::int64_t>(st.st_size);
}

Result<TrainProgress> load_training_state(const std::string& path, Trainer& trainer, const std::string& model) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error(Code::not_found, path + ": no such checkpoint");
  auto bad = [&](const std::string& why) { return make_error(Code::invalid_argument, path + ": " + why); };
  TrainProgress at;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    c10::IValue version, name, epoch, learn, begin, loss_sum, correct, seconds;
    if (!archive.try_read("version", version) || version.toInt() != kStateVersion) {
      return bad("not a tsum-train checkpoint of this version");
    }
    if (!archive.try_read("model_name", name) || name.toStringRef() != model) {
      return bad("a checkpoint of model " + (name.isString() ? name.toStringRef() : std::string("?")) +
                 ", not " + model);
    }
    if (!archive.try_read("epoch", epoch) || !archive.try_read("learn_seconds", learn) ||
        !archive.try_read("begin", begin) || !archive.try_read("loss_sum", loss_sum) ||
        !archive.try_read("correct", correct) || !archive.try_read("epoch_seconds", seconds)) {
      return bad("it lacks where the training stood");
    }
    at.model = model;
    at.epoch = epoch.toInt();
    at.learn_seconds = learn.toDouble();
    at.cursor.begin = begin.toInt();
    at.cursor.loss_sum = loss_sum.toDouble();
    at.cursor.correct = correct.toInt();
    at.cursor.seconds = seconds.toDouble();
    torch::Tensor order, order_rng;
    if (archive.try_read("order", order, true)) at.cursor.order = order;
    if (archive.try_read("order_rng", order_rng, true)) at.order_rng = order_rng;
    c10::IValue share;
    if (archive.try_read("share_examples", share)) at.share_examples = share.toDouble();
    if (auto s = trainer.load_state(archive); !s.ok()) return bad(s.error().detail);
    torch::Tensor rng;
    if (!archive.try_read("rng", rng, true)) return bad("it lacks the random generator's state");
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  } catch (const std::exception& e) {
    return bad(std::string("not a readable checkpoint: ") + e.what());
  }
  return at;
}

}  // namespace tsum::workload
