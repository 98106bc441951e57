#include "lower/cpu/parallel_calls.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <vector>

#include "lower/cpu/outline_parallel.h"

namespace shapeml::lower::cpu {

llvm::GlobalVariable* add_hook_table(llvm::Module& mod, const std::string& name, unsigned slots) {
  auto* table_ty = llvm::ArrayType::get(llvm::PointerType::get(mod.getContext(), 0), slots);
  auto* table = new llvm::GlobalVariable(mod, table_ty, false, llvm::GlobalValue::ExternalLinkage, llvm::ConstantAggregateZero::get(table_ty), name);
  table->setVisibility(llvm::GlobalValue::DefaultVisibility);
  table->setAlignment(llvm::Align(8));
  return table;
}

int route_parallel_loops(llvm::Module& mod, const std::string& symbol) {
  llvm::LLVMContext& ctx = mod.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* void_ty = llvm::Type::getVoidTy(ctx);
  llvm::GlobalVariable* table = add_hook_table(mod, symbol + "_parallel_hooks", 1);
  auto* table_ty = table->getValueType();
  auto* task_ty = llvm::FunctionType::get(void_ty, {ptr, i64, i64}, false);
  auto* hook_ty = llvm::FunctionType::get(void_ty, {i64, ptr, ptr}, false);

  // SYMBOL_parallel_for(n, task, closure): through the table, or inline.
  llvm::Function* dispatch = llvm::Function::Create(hook_ty, llvm::GlobalValue::InternalLinkage, symbol + "_parallel_for", mod);
  dispatch->addFnAttr(llvm::Attribute::NoUnwind);
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", dispatch));
    llvm::Value* hook = b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP2_64(table_ty, table, 0, 0), llvm::MaybeAlign(8));
    llvm::BasicBlock* inline_bb = llvm::BasicBlock::Create(ctx, "inline", dispatch);
    llvm::BasicBlock* hooked = llvm::BasicBlock::Create(ctx, "hook", dispatch);
    b.CreateCondBr(b.CreateIsNull(hook), inline_bb, hooked);
    llvm::Argument* n = dispatch->getArg(0);
    llvm::Argument* task = dispatch->getArg(1);
    llvm::Argument* closure = dispatch->getArg(2);
    b.SetInsertPoint(inline_bb);
    b.CreateCall(task_ty, task, {closure, llvm::ConstantInt::get(i64, 0), n});
    b.CreateRetVoid();
    b.SetInsertPoint(hooked);
    b.CreateCall(hook_ty, hook, {n, task, closure});
    b.CreateRetVoid();
  }

  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& f : mod)
    if (f.getName().starts_with(detail::kParallelBodyPrefix) && !f.isDeclaration())
      for (llvm::User* u : f.users())
        if (auto* c = llvm::dyn_cast<llvm::CallInst>(u); c && c->getCalledFunction() == &f) calls.push_back(c);
  int routed = 0;
  for (llvm::CallInst* call : calls) {
    llvm::Function* body = call->getCalledFunction();
    body->setLinkage(llvm::GlobalValue::InternalLinkage);
    // The closure: every argument after (begin, end).
    std::vector<llvm::Type*> fields;
    for (unsigned i = 2; i < call->arg_size(); ++i) fields.push_back(call->getArgOperand(i)->getType());
    auto* closure_ty = llvm::StructType::get(ctx, fields);
    // task(closure, begin, end) = body(begin, end, closure fields...)
    llvm::Function* task = llvm::Function::Create(task_ty, llvm::GlobalValue::InternalLinkage, body->getName() + "_task", mod);
    task->addFnAttr(llvm::Attribute::NoUnwind);
    // Never inlined into the dispatch's serial branch: the loop exists once,
    // in its task, not once more in the caller (that copy doubled the code
    // LLVM optimizes and emits; docs/design/cpu-codegen.md, "Parallel code generation").
    task->addFnAttr(llvm::Attribute::NoInline);
    {
      llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", task));
      std::vector<llvm::Value*> args = {task->getArg(1), task->getArg(2)};
      for (unsigned i = 0; i < fields.size(); ++i)
        args.push_back(b.CreateLoad(fields[i], b.CreateStructGEP(closure_ty, task->getArg(0), i)));
      b.CreateCall(body, args);
      b.CreateRetVoid();
    }
    // At the call: the closure on the caller's stack (in its entry block, so
    // that a loop around the call does not grow the stack), then the hook.
    llvm::Function* caller = call->getFunction();
    llvm::IRBuilder<> entry(&caller->getEntryBlock(), caller->getEntryBlock().begin());
    llvm::AllocaInst* closure = entry.CreateAlloca(closure_ty);
    llvm::IRBuilder<> b(call);
    for (unsigned i = 0; i < fields.size(); ++i) b.CreateStore(call->getArgOperand(i + 2), b.CreateStructGEP(closure_ty, closure, i));
    b.CreateCall(dispatch, {call->getArgOperand(1), task, closure});
    call->eraseFromParent();
    ++routed;
  }
  return routed;
}

}  // namespace shapeml::lower::cpu
