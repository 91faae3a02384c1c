#include "workload/models/bilstm.h"

namespace tsum::workload {
namespace {

constexpr std::int64_t kEmbedding = 128;
constexpr std::int64_t kHidden = 64;
constexpr double kLstmDropout = 0.5;

}  // namespace

BiLstm::BiLstm(std::int64_t vocab) : Model(kName), vocab_(vocab) {
  embedding_ = register_module("embedding", torch::nn::Embedding(vocab, kEmbedding));
  lstm_ = register_module(
      "lstm",
      torch::nn::LSTM(
          torch::nn::LSTMOptions(kEmbedding, kHidden).batch_first(true).bidirectional(true)));
  fc_ = register_module("fc", torch::nn::Linear(2 * kHidden, 1));
}

torch::Tensor BiLstm::forward(const torch::Tensor& x) {
  const auto [outputs, state] = lstm_->forward(embedding_->forward(x));
  const torch::Tensor& h_n = std::get<0>(state);  // [2 directions, N, kHidden]
  auto h = torch::cat({h_n[0], h_n[1]}, 1);
  h = dropout_(h, kLstmDropout, is_training());
  return fc_->forward(h);
}

}  // namespace tsum::workload
