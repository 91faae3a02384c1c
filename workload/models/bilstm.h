// The Keras `imdb_bidirectional_lstm` example network, a binary classifier of token sequences:
//   Embedding(vocab, 128) -> Bidirectional(LSTM 64) -> Dropout 0.5 -> Dense 1 (one logit).
// Input: int64 token ids [N, kSequenceLength] in [0, vocab) (0 is the padding id). The LSTM output
// is the final hidden state of each direction, concatenated (128 values), as Keras's Bidirectional
// wrapper returns with return_sequences=False. Loss: sigmoid + binary cross-entropy on the logit.
// libtorch's LSTM keeps two bias vectors per gate where Keras keeps one, so the count is 512 higher
// than Keras's: 128*vocab + 99,457 parameters.
#pragma once

#include "workload/models/fast_dropout.h"
#include "workload/models/model.h"
#include "workload/data/token_data.h"

namespace tsum::workload {

class BiLstm : public Model {
 public:
  std::vector<FastDropout*> dropout_streams() override { return {&dropout_}; }
  static constexpr const char* kName = "bilstm";
  static constexpr std::int64_t kDefaultVocab = 20000;  // Keras example: max_features

  explicit BiLstm(std::int64_t vocab = kDefaultVocab);
  torch::Tensor forward(const torch::Tensor& x) override;
  InputShape input_shape() const override {
    return {InputKind::tokens, 0, 0, 0, kSequenceLength, vocab_, 2};
  }
  LossKind loss_kind() const override { return LossKind::binary_cross_entropy; }

 private:
  std::int64_t vocab_;
  torch::nn::Embedding embedding_{nullptr};
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::Linear fc_{nullptr};
  FastDropout dropout_;
};

}  // namespace tsum::workload
