// RUN: kiln-opt %s -split-input-file -kiln-cpu-alias-scopes | FileCheck %s

// kiln-cpu-alias-scopes (codegen/cpu/AliasScopes.cpp): loads and stores whose
// buffer traces to a root (a static byte range of an arena view, an alloc,
// a noalias argument) become llvm.load/llvm.store with one alias scope per
// root and, as noalias, the scopes of the roots disjoint from it.

// Tests three arena views: %a = bytes [0, 64), %b = [64, 128) and %c =
// [0, 64) again (an in-place reuse of %a's slot, so one root with %a). %b
// is disjoint from that slot; the noalias argument %out from both.
// CHECK-DAG: #[[DOMAIN:.*]] = #llvm.alias_scope_domain<id = {{.*}}, description = "kiln buffers of arena_views">
// CHECK-DAG: #[[A:alias_scope[0-9]*]] = #llvm.alias_scope<id = distinct[1]<>, domain = #[[DOMAIN]]>
// CHECK-DAG: #[[B:alias_scope[0-9]*]] = #llvm.alias_scope<id = distinct[2]<>, domain = #[[DOMAIN]]>
// CHECK-DAG: #[[OUT:alias_scope[0-9]*]] = #llvm.alias_scope<id = distinct[3]<>, domain = #[[DOMAIN]]>
// CHECK-LABEL: func.func @arena_views
// CHECK: llvm.load {{.*}} {alias_scopes = [#[[A]]], noalias_scopes = [#[[B]], #[[OUT]]]}
// CHECK: llvm.store {{.*}} {alias_scopes = [#[[B]]], noalias_scopes = [#[[A]], #[[OUT]]]}
// CHECK: llvm.load {{.*}} {alias_scopes = [#[[B]]], noalias_scopes = [#[[A]], #[[OUT]]]}
// CHECK: llvm.store {{.*}} {alias_scopes = [#[[A]]], noalias_scopes = [#[[B]], #[[OUT]]]}
// CHECK: llvm.load {{.*}} {alias_scopes = [#[[A]]], noalias_scopes = [#[[B]], #[[OUT]]]}
// CHECK: llvm.store {{.*}} {alias_scopes = [#[[OUT]]], noalias_scopes = [#[[A]], #[[B]]]}
// CHECK-NOT: memref.load
// CHECK-NOT: memref.store
func.func @arena_views(%i: index, %out: memref<16xf32> {llvm.noalias}) {
  %arena = memref.alloc() : memref<128xi8>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %a = memref.view %arena[%c0][] : memref<128xi8> to memref<16xf32>
  %b = memref.view %arena[%c64][] : memref<128xi8> to memref<4x4xf32>
  %c = memref.view %arena[%c0][] : memref<128xi8> to memref<16xf32>
  %x = memref.load %a[%i] : memref<16xf32>
  %bs = memref.subview %b[1, 0] [1, 4] [1, 1] : memref<4x4xf32> to memref<4xf32, strided<[1], offset: 4>>
  memref.store %x, %bs[%c0] : memref<4xf32, strided<[1], offset: 4>>
  %y = memref.load %b[%c0, %c0] : memref<4x4xf32>
  memref.store %y, %c[%i] : memref<16xf32>
  %z = memref.load %c[%c0] : memref<16xf32>
  memref.store %z, %out[%i] : memref<16xf32>
  memref.dealloc %arena : memref<128xi8>
  return
}

// -----

// Tests that an argument without llvm.noalias is no root: its accesses stay
// memref ops, and the lone remaining root gets no metadata either.
// CHECK-LABEL: func.func @negative_plain_argument
// CHECK-NOT: alias_scopes
// CHECK: memref.load
// CHECK: memref.store
func.func @negative_plain_argument(%in: memref<16xf32>, %out: memref<16xf32> {llvm.noalias}) {
  %c0 = arith.constant 0 : index
  %x = memref.load %in[%c0] : memref<16xf32>
  memref.store %x, %out[%c0] : memref<16xf32>
  return
}

// -----

// Tests that a view of dynamic size covers its whole arena: it overlaps the
// static view, so neither is noalias with the other, while the separate
// alloc is disjoint from both.
// CHECK-LABEL: func.func @dynamic_view
// CHECK: llvm.load {{.*}} {alias_scopes = [#[[S:.*]]], noalias_scopes = [#[[T:.*]]]}
// CHECK: llvm.store {{.*}} {alias_scopes = [#[[D:.*]]], noalias_scopes = [#[[T]]]}
// CHECK: llvm.store {{.*}} {alias_scopes = [#[[T]]], noalias_scopes = [#[[S]], #[[D]]]}
func.func @dynamic_view(%n: index, %v: f32) {
  %arena = memref.alloc() : memref<1024xi8>
  %other = memref.alloc() : memref<4xf32>
  %c0 = arith.constant 0 : index
  %s = memref.view %arena[%c0][] : memref<1024xi8> to memref<16xf32>
  %d = memref.view %arena[%c0][%n] : memref<1024xi8> to memref<?xf32>
  %x = memref.load %s[%c0] : memref<16xf32>
  memref.store %x, %d[%c0] : memref<?xf32>
  memref.store %v, %other[%c0] : memref<4xf32>
  return
}
