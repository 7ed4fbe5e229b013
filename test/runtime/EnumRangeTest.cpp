//===- EnumRangeTest.cpp - Any int passed as a public enum is checked -----===//
//
// moecomm.h promises that enum values out of range are InvalidArgument, not
// undefined behaviour. In C++ an enum whose enumerators are all >= 0 cannot
// hold a negative value (UBSan's -fsanitize=enum traps on loading one), so
// this test passes negative and huge values to every entry point that takes
// an enum, directly or in a struct, and runs under the sanitize preset.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>

using namespace moecomm;
using namespace moecomm::test;

namespace {

/// Out-of-range values of every enum: the extremes of int, -1, and the first
/// value past the last enumerator of each enum (passed as `past`).
std::vector<int> badValues(int past) { return {INT_MIN, -1, past, INT_MAX}; }

template <typename E> E as(int v) { return static_cast<E>(v); }

TEST(EnumRange, ErrorStringOfAnyInt) {
  for (int v : badValues(moecommNumResults)) {
    const char *s = moecommGetErrorString(as<moecommResult_t>(v));
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(s, "unknown result code") << v;
  }
  EXPECT_STREQ(moecommGetErrorString(moecommInvalidArgument),
               "invalid argument");
}

TEST(EnumRange, TraceKindNameOfAnyInt) {
  for (int v : badValues(moecommTraceKindCall + 1))
    EXPECT_STREQ(moecommTraceKindName(as<moecommTraceKind_t>(v)), "unknown")
        << v;
  EXPECT_STREQ(moecommTraceKindName(moecommTraceKindAllToAll), "all_to_all");
}

/// The routing of a two-rank layout: token 0 of rank r goes to expert r.
struct Routing {
  int64_t idx[1];
  float w[1] = {1.0f};
  moecommLayoutDesc_t desc;
  explicit Routing(int rank)
      : idx{rank}, desc(oneTokenDesc(idx, w, /*numExperts=*/2, moecommFlat)) {}
};

TEST(EnumRange, LayoutDescFields) {
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    auto expectRejected = [&](const moecommLayoutDesc_t &d, const char *what,
                              int v) {
      moecommLayout_t l = nullptr;
      EXPECT_EQ(moecommLayoutCreate(comm, &d, &l), moecommInvalidArgument)
          << what << " = " << v;
      EXPECT_EQ(l, nullptr);
      EXPECT_NE(std::string(moecommCommGetLastError(comm)), "");
    };
    for (int v : badValues(moecommMxfp8 + 1)) {
      Routing a(r);
      a.desc.idxType = as<moecommDataType_t>(v);
      expectRejected(a.desc, "idxType", v);
      Routing b(r);
      b.desc.wireType = as<moecommDataType_t>(v);
      expectRejected(b.desc, "wireType", v);
    }
    for (int v : badValues(moecommAuto + 1)) {
      Routing a(r);
      a.desc.strategy = as<moecommStrategy_t>(v);
      expectRejected(a.desc, "strategy", v);
    }
    // Read only with a placement (here: the identity of the 2 experts).
    const int64_t slots[2] = {0, 1};
    for (int v : badValues(moecommReplicaLoadOnly + 1)) {
      Routing a(r);
      a.desc.numSlots = 2;
      a.desc.slotExperts = slots;
      a.desc.replicaChoice = as<moecommReplicaChoice_t>(v);
      expectRejected(a.desc, "replicaChoice", v);
    }
    // The communicator is still usable.
    Routing good(r);
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &good.desc, &l), moecommSuccess)
        << moecommCommGetLastError(comm);
    moecommLayoutDestroy(l);
  });
}

TEST(EnumRange, DirectionsAndRowTypes) {
  const int64_t H = 4;
  runOnThreads(2, 1, [&](moecommComm_t comm, int r) {
    Routing routing(r);
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &routing.desc, &l), moecommSuccess)
        << moecommCommGetLastError(comm);
    moecommLayoutInfo_t info;
    ASSERT_EQ(moecommLayoutGetInfo(l, &info), moecommSuccess);
    ASSERT_EQ(info.numStages, 1);
    Rows x(1, H, moecommFloat32), recv(info.recvRows, H, moecommFloat32);
    int64_t sendRows = 0, recvRows = 0;
    moecommScope_t scope;
    ASSERT_EQ(moecommLayoutStage(l, moecommDirectionDispatch, 0, &scope,
                                 &sendRows, &recvRows),
              moecommSuccess);
    Rows send(sendRows, H, moecommFloat32), srecv(recvRows, H, moecommFloat32);

    for (int v : badValues(moecommDirectionAllToAll + 1)) {
      auto dir = as<moecommDirection_t>(v);
      EXPECT_EQ(moecommLayoutStage(l, dir, 0, &scope, &sendRows, &recvRows),
                moecommInvalidArgument)
          << v;
      EXPECT_NE(std::string(moecommCommGetLastError(nullptr)), "");
      EXPECT_EQ(moecommPack(comm, l, dir, 0, x.view(), 0, send.view(), nullptr),
                moecommInvalidArgument)
          << v;
      EXPECT_EQ(moecommUnpack(comm, l, dir, srecv.view(), 0, recv.view(),
                              nullptr),
                moecommInvalidArgument)
          << v;
      EXPECT_EQ(moecommExchange(comm, l, dir, 0, send.view(), srecv.view(),
                                nullptr),
                moecommInvalidArgument)
          << v;
      moecommRequest_t req = nullptr;
      EXPECT_EQ(moecommExchangeStart(comm, l, dir, 0, send.view(),
                                     srecv.view(), nullptr, &req),
                moecommInvalidArgument)
          << v;
      EXPECT_EQ(req, nullptr);
      EXPECT_NE(std::string(moecommCommGetLastError(comm)), "");
    }
    // The last enumerator of moecommDirection_t is not a staged direction.
    EXPECT_EQ(moecommLayoutStage(l, moecommDirectionAllToAll, 0, &scope,
                                 &sendRows, &recvRows),
              moecommInvalidArgument);

    for (int v : badValues(moecommMxfp8 + 1)) {
      auto t = as<moecommDataType_t>(v);
      EXPECT_EQ(moecommDispatch(comm, l, x.view(), t, recv.view(), nullptr),
                moecommInvalidArgument)
          << "wire " << v;
      moecommRows_t bx = x.rows, brecv = recv.rows;
      bx.type = t;
      EXPECT_EQ(moecommDispatch(comm, l, &bx, moecommFloat32, recv.view(),
                                nullptr),
                moecommInvalidArgument)
          << "x type " << v;
      brecv.type = t;
      moecommRequest_t req = nullptr;
      EXPECT_EQ(moecommDispatchStart(comm, l, x.view(), moecommFloat32, &brecv,
                                     nullptr, &req),
                moecommInvalidArgument)
          << "recv type " << v;
      EXPECT_EQ(req, nullptr);
      EXPECT_EQ(moecommCombine(comm, l, &brecv, 1, x.view(), nullptr),
                moecommInvalidArgument)
          << "y type " << v;
      EXPECT_EQ(moecommCombineStart(comm, l, recv.view(), 1, &bx, nullptr,
                                    &req),
                moecommInvalidArgument)
          << "out type " << v;
      EXPECT_EQ(req, nullptr);
      EXPECT_EQ(moecommPack(comm, l, moecommDirectionDispatch, 0, &bx, 0,
                            send.view(), nullptr),
                moecommInvalidArgument)
          << "pack in type " << v;
      moecommRows_t bsend = send.rows;
      bsend.type = t;
      EXPECT_EQ(moecommPack(comm, l, moecommDirectionDispatch, 0, x.view(), 0,
                            &bsend, nullptr),
                moecommInvalidArgument)
          << "pack out type " << v;
      EXPECT_EQ(moecommExchange(comm, l, moecommDirectionDispatch, 0, &bsend,
                                srecv.view(), nullptr),
                moecommInvalidArgument)
          << "exchange send type " << v;
      moecommRows_t bsrecv = srecv.rows;
      bsrecv.type = t;
      EXPECT_EQ(moecommUnpack(comm, l, moecommDirectionDispatch, &bsrecv, 0,
                              recv.view(), nullptr),
                moecommInvalidArgument)
          << "unpack in type " << v;
      int64_t counts[2] = {0, 0};
      counts[r] = 1;
      EXPECT_EQ(moecommAllToAll(comm, &bx, counts, x.view(), counts, nullptr),
                moecommInvalidArgument)
          << "all_to_all send type " << v;
      EXPECT_EQ(moecommAllToAllStart(comm, x.view(), counts, &bx, counts,
                                     nullptr, &req),
                moecommInvalidArgument)
          << "all_to_all recv type " << v;
      EXPECT_EQ(req, nullptr);
    }
    // Still usable: a correct dispatch after all the rejected calls.
    EXPECT_EQ(moecommDispatch(comm, l, x.view(), moecommFloat32, recv.view(),
                              nullptr),
              moecommSuccess)
        << moecommCommGetLastError(comm);
    moecommLayoutDestroy(l);
  });
}

TEST(EnumRange, Fp8Types) {
  Rows f(2, 130, moecommFloat32), q(2, 130, moecommFloat8E4M3);
  for (int v : badValues(moecommMxfp8 + 1)) {
    auto t = as<moecommDataType_t>(v);
    moecommRows_t bf = f.rows, bq = q.rows;
    bf.type = t;
    bq.type = t;
    EXPECT_EQ(moecommQuantizeFp8(&bf, q.view()), moecommInvalidArgument) << v;
    EXPECT_EQ(moecommQuantizeFp8(f.view(), &bq), moecommInvalidArgument) << v;
    EXPECT_EQ(moecommDequantizeFp8(&bq, f.view()), moecommInvalidArgument) << v;
    EXPECT_EQ(moecommDequantizeFp8(q.view(), &bf), moecommInvalidArgument)
        << v;
    EXPECT_NE(std::string(moecommCommGetLastError(nullptr)), "");
  }
}

} // namespace
