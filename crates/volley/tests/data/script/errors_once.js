// An exception in an iteration is logged once per distinct message; the run goes on.
export const options = { iterations: 5 };

export default () => {
  if (__ITER >= 0) throw new Error('the same failure each time');
};
