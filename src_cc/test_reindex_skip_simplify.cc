/*
 * Native regression test of the tvmfork patch
 * "[S-TIR][Schedule] ReIndex: skip_simplify keeps the unit iterators of an access"
 * (BUGS.md section 2): on a 1x1 convolution, ReIndex simplifies the unit kernel iterators
 * away unless skip_simplify is set, and the traced schedule records the flag.
 */
#include <gtest/gtest.h>
#include <tvm/ffi/function.h>
#include <tvm/ir/module.h>
#include <tvm/s_tir/schedule/schedule.h>
#include <tvm/te/operation.h>
#include <tvm/tirx/op.h>

#include <vector>

namespace {

using namespace tvm;  // NOLINT

/*! \brief Y[n, f, y, x] = sum(X[n, c, y + ry, x + rx] * W[f, c, ry, rx]), kernel 1x1. */
IRModule Conv1x1() {
  te::Tensor x = te::placeholder({1, 16, 8, 8}, PrimType::Float(32), "X");
  te::Tensor w = te::placeholder({32, 16, 1, 1}, PrimType::Float(32), "W");
  tirx::IterVar rc = te::reduce_axis(Range(0, 16), "rc");
  tirx::IterVar ry = te::reduce_axis(Range(0, 1), "ry");
  tirx::IterVar rx = te::reduce_axis(Range(0, 1), "rx");
  te::Tensor y = te::compute(
      {1, 32, 8, 8},
      [&](const ffi::Array<tirx::PrimVar>& i) {
        return sum(x(i[0], rc->var, i[2] + ry->var, i[3] + rx->var) *
                       w(i[1], rc->var, ry->var, rx->var),
                   {rc, ry, rx});
      },
      "conv");
  static ffi::Function create = ffi::Function::GetGlobalRequired("te.CreatePrimFunc");
  tirx::PrimFunc func =
      create(ffi::Array<te::Tensor>{x, w, y}, ffi::Optional<PrimType>()).cast<tirx::PrimFunc>();
  return IRModule::FromExpr(func);
}

std::vector<int64_t> ReindexShape(const s_tir::Schedule& sch, const s_tir::SBlockRV& block) {
  std::vector<int64_t> shape;
  for (const PrimExpr& d : sch->Get(block)->writes[0]->buffer->shape) {
    shape.push_back(d.as<IntImmNode>()->value);
  }
  return shape;
}

s_tir::Schedule Traced() {
  return s_tir::Schedule::Traced(Conv1x1(), /*seed=*/0, /*debug_mask=*/-1,
                                 s_tir::ScheduleErrorRenderLevel::kDetail);
}

TEST(ReIndex, DefaultSimplifiesUnitItersAway) {
  s_tir::Schedule sch = Traced();
  s_tir::SBlockRV conv = sch->GetSBlock("conv", ffi::String("main"));
  s_tir::SBlockRV data = sch->ReIndex(conv, 0, s_tir::BufferIndexType::kRead);
  EXPECT_EQ(ReindexShape(sch, data), (std::vector<int64_t>{1, 8, 8, 16}));
}

TEST(ReIndex, SkipSimplifyKeepsEveryIterOfTheAccess) {
  s_tir::Schedule sch = Traced();
  s_tir::SBlockRV conv = sch->GetSBlock("conv", ffi::String("main"));
  s_tir::SBlockRV data = sch->ReIndex(conv, 0, s_tir::BufferIndexType::kRead, true);
  s_tir::SBlockRV weight = sch->ReIndex(conv, 1, s_tir::BufferIndexType::kRead, true);
  EXPECT_EQ(ReindexShape(sch, data), (std::vector<int64_t>{1, 8, 8, 16, 1, 1}));
  EXPECT_EQ(ReindexShape(sch, weight), (std::vector<int64_t>{32, 16, 1, 1}));
}

TEST(ReIndex, TraceRecordsSkipSimplifyAndReplays) {
  s_tir::Schedule sch = Traced();
  s_tir::SBlockRV conv = sch->GetSBlock("conv", ffi::String("main"));
  sch->ReIndex(conv, 0, s_tir::BufferIndexType::kRead, true);
  s_tir::Trace trace = sch->trace().value();
  ffi::String printed = ffi::Function::GetGlobalRequired("s_tir.schedule.TraceAsPython")(
                            trace, true)
                            .cast<ffi::Array<ffi::String>>()[1];
  EXPECT_NE(std::string(printed).find("skip_simplify=True"), std::string::npos) << printed;

  s_tir::Schedule replay = Traced();
  // through the registry, as Python replays traces (TraceNode's methods are not exported)
  ffi::Function::GetGlobalRequired("s_tir.schedule.TraceApplyToSchedule")(trace, replay, false,
                                                                          nullptr);
  EXPECT_TRUE(ffi::StructuralEqual()(sch->mod(), replay->mod()));
}

}  // namespace
